-- lock.lua takes the lock KEYS[1] for the request ARGV[1] ("process:request"), with a lease of
-- ARGV[2] ms, first come first: KEYS[2] is the line of waiting owners (a list), KEYS[3] the time,
-- in ms on Redis's clock, by which each must ask again to keep its place (a sorted set). The lock
-- is a hash of owner → holds; KEYS[4] counts the acquisitions: each takes the next number as its
-- fencing token. Returns the token (1 or more) when the request takes the lock, 0 when it already
-- held it (one more hold: it keeps the token of its first), and minus the ms it may wait at most
-- (1 or more) when it waits in line.
-- Free and nobody in line, or already this request's: one more hold, and the lease (re)started.
if redis.call("EXISTS", KEYS[1], KEYS[2]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  local holds = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  if holds == 1 then
    return redis.call("INCR", KEYS[4])
  end
  return 0
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A waiter that stopped asking (it died, or gave up) must not hold up the line for ever.
local first = redis.call("LINDEX", KEYS[2], 0)
while first and tonumber(redis.call("ZSCORE", KEYS[3], first) or 0) <= now do
  redis.call("LPOP", KEYS[2])
  redis.call("ZREM", KEYS[3], first)
  first = redis.call("LINDEX", KEYS[2], 0)
end
-- Free, and nobody before the request in line: its turn. It leaves the line with the lock.
if redis.call("EXISTS", KEYS[1]) == 0 and (not first or first == ARGV[1]) then
  redis.call("LPOP", KEYS[2])
  redis.call("ZREM", KEYS[3], ARGV[1])
  redis.call("HSET", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return redis.call("INCR", KEYS[4])
end
-- Wait in line: join its end, or keep its place, and ask again within two leases.
if not redis.call("ZSCORE", KEYS[3], ARGV[1]) then
  redis.call("RPUSH", KEYS[2], ARGV[1])
end
redis.call("ZADD", KEYS[3], now + 2 * tonumber(ARGV[2]), ARGV[1])
local left = redis.call("PTTL", KEYS[1])
if left < 0 then -- free, but an earlier waiter has the turn: until it takes it or is dropped
  left = tonumber(redis.call("ZSCORE", KEYS[3], first)) - now
end
return -math.max(left, 1)
