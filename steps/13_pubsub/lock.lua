-- lock.lua takes the lock KEYS[1] for the request ARGV[1], with a lease of ARGV[2] ms. The lock is
-- a hash of owner → holds: if it is free, or already this request's, count one more hold and
-- (re)start the lease. Returns {1, holds} when the request holds it now, {0, ms left on the lease}
-- when another request does.
if redis.call("EXISTS", KEYS[1]) == 0 or redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  local holds = redis.call("HINCRBY", KEYS[1], ARGV[1], 1)
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return {1, holds}
end
return {0, redis.call("PTTL", KEYS[1])}
