-- leave.lua takes the request ARGV[2] of the process ARGV[1] (its owner is "process:request") out
-- of the line KEYS[2] and its deadline out of KEYS[3]. If it was first in line and the lock KEYS[1]
-- is free, the turn it leaves passes on: the next waiter is told on its process's channel (ARGV[3]
-- followed by the process's part of its owner), as unlock.lua would tell it.
local owner = ARGV[1] .. ":" .. ARGV[2]
local first = redis.call("LINDEX", KEYS[2], 0)
redis.call("LREM", KEYS[2], 0, owner)
redis.call("ZREM", KEYS[3], owner)
if first == owner and redis.call("EXISTS", KEYS[1]) == 0 then
  local next = redis.call("LINDEX", KEYS[2], 0)
  if next then
    redis.call("PUBLISH", ARGV[3] .. string.match(next, "^[^:]*"), next)
  end
end
return 1
