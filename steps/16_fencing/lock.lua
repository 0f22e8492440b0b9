-- lock.lua takes the lock KEYS[1] for the request ARGV[2] of the process ARGV[1], with a lease of
-- ARGV[3] ms, in the order the requests asked. The lock is a hash of owner → holds, the owner being
-- "process:request"; KEYS[2] is the line of waiting owners (a list, first come first), KEYS[3] the
-- time by which each waiter must ask again (a sorted set of owner → ms on Redis's clock), ARGV[4]
-- how long a waiter may stay away; KEYS[4] counts the acquisitions: each one takes the next number
-- as its fencing token.
-- Returns {holds, token} when the request holds the lock now (token 0 for a nested hold: the
-- request has its token from its first), {minus the ms it may wait at most, 0} when it waits in
-- line.
local owner = ARGV[1] .. ":" .. ARGV[2]

-- Free, and nobody waiting (neither key exists): the request takes it, and the line is not read.
if redis.call("EXISTS", KEYS[1], KEYS[2]) == 0 then
  redis.call("HSET", KEYS[1], owner, 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
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
if redis.call("EXISTS", KEYS[1]) == 0 and (not first or first == owner) then
  -- Free, and nobody asked before this request: it is its turn.
  if first then
    redis.call("LPOP", KEYS[2])
    redis.call("ZREM", KEYS[3], owner)
  end
  redis.call("HSET", KEYS[1], owner, 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
  return {1, redis.call("INCR", KEYS[4])}
end
if redis.call("HEXISTS", KEYS[1], owner) == 1 then
  local holds = redis.call("HINCRBY", KEYS[1], owner, 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[3])
  return {holds, 0}
end

-- Wait in line: join it at the end, or stay where it is, and ask again by the deadline.
if not redis.call("ZSCORE", KEYS[3], owner) then
  redis.call("RPUSH", KEYS[2], owner)
  first = first or owner
end
redis.call("ZADD", KEYS[3], now + tonumber(ARGV[4]), owner)
local left = redis.call("PTTL", KEYS[1])
if left < 0 then
  -- The lock is free, but an earlier waiter has the turn: wait until it takes it or is dropped.
  left = tonumber(redis.call("ZSCORE", KEYS[3], first)) - now
end
return {-left, 0}
