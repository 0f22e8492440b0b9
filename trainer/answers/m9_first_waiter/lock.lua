-- lock.lua takes the lock KEYS[1] for the request ARGV[1], with a lease of ARGV[2] ms, in the order
-- the requests asked. The lock is a hash of owner → holds; KEYS[2] is the line of waiting
-- requests (a list, first come first), KEYS[3] the time by which each must ask again to keep its
-- place (a sorted set of owner → ms on Redis's clock), ARGV[3] how long a waiter may stay away.
-- Returns {1, holds} when the request holds it now, {0, ms to wait at most} when it waits in line.
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
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  local holds = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return {1, holds}
end
local first = redis.call("LINDEX", KEYS[2], 0)
if redis.call("EXISTS", KEYS[1]) == 0 and (not first or first == ARGV[1]) then
  -- Free, and nobody asked before this request: its turn.
  if first then
    redis.call("LPOP", KEYS[2])
    redis.call("ZREM", KEYS[3], ARGV[1])
  end
  redis.call("HSET", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return {1, 1}
end
-- Wait in line: join it at the end, or keep its place, and ask again by the deadline.
if not redis.call("ZSCORE", KEYS[3], ARGV[1]) then
  redis.call("RPUSH", KEYS[2], ARGV[1])
  first = first or ARGV[1]
end
redis.call("ZADD", KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
local left = redis.call("PTTL", KEYS[1])
if left < 0 then
  -- Free, but an earlier waiter has the turn: wait until it takes it or is dropped.
  left = tonumber(redis.call("ZSCORE", KEYS[3], first)) - now
end
return {0, left}
