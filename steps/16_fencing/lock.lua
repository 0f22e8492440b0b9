-- lock.lua takes the lock KEYS[1] for the request ARGV[1], with a lease of ARGV[2] ms, in the order
-- the requests asked. The lock is a hash of owner → holds; KEYS[2] is the line of waiting requests
-- (a list, first come first), KEYS[3] the time by which each waiter must ask again (a sorted set of
-- owner → ms on Redis's clock), ARGV[3] how long a waiter may stay away; KEYS[4] counts the
-- acquisitions: each one takes the next number as its fencing token.
-- Returns {holds, token} when the request holds the lock now (token 0 for a nested hold: the
-- request has its token from its first), {minus the ms it may wait at most, 0} when it waits in
-- line.

-- Free, and nobody waiting: the request takes it, and the line is not read.
if redis.call("EXISTS", KEYS[1]) == 0 and redis.call("EXISTS", KEYS[2]) == 0 then
  redis.call("HSET", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return {1, redis.call("INCR", KEYS[4])}
end

local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- A waiter that stopped asking (it died, or gave up) must not hold up the line for ever.
while true do
  local first = redis.call("LINDEX", KEYS[2], 0)
  if not first then break end
  local by = tonumber(redis.call("ZSCORE", KEYS[3], first))
  if by and by > now then break end
  redis.call("LPOP", KEYS[2])
  redis.call("ZREM", KEYS[3], first)
end

local first = redis.call("LINDEX", KEYS[2], 0)
if redis.call("EXISTS", KEYS[1]) == 0 and (not first or first == ARGV[1]) then
  -- Free, and nobody asked before this request: it is its turn.
  if first then
    redis.call("LPOP", KEYS[2])
    redis.call("ZREM", KEYS[3], ARGV[1])
  end
  redis.call("HSET", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return {1, redis.call("INCR", KEYS[4])}
end
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  local holds = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return {holds, 0}
end

-- Wait in line: join it at the end, or stay where it is, and ask again by the deadline.
if not redis.call("ZSCORE", KEYS[3], ARGV[1]) then
  redis.call("RPUSH", KEYS[2], ARGV[1])
  first = first or ARGV[1]
end
redis.call("ZADD", KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
local left = redis.call("PTTL", KEYS[1])
if left < 0 then
  -- The lock is free, but an earlier waiter has the turn: wait until it takes it or is dropped.
  left = tonumber(redis.call("ZSCORE", KEYS[3], first)) - now
end
return {-left, 0}
