-- renew.lua pushes the lease of the lock KEYS[1] to ARGV[2] ms, only if the request ARGV[1] still
-- holds it (the renewal of steps 08-10 does not look, and can extend another holder's lease).
-- Returns 1 if it renewed, 0 if the request no longer holds the lock.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 1 then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
