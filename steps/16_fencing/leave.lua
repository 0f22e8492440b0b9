-- leave.lua takes the request ARGV[1] out of the line KEYS[2] and its deadline out of KEYS[3]. If
-- it was first in line and the lock KEYS[1] is free, the turn it leaves passes on: the next waiter
-- is told, as unlock.lua tells it (on ARGV[2] followed by its process's part of its owner).
local first = redis.call("LINDEX", KEYS[2], 0)
redis.call("LREM", KEYS[2], 0, ARGV[1])
redis.call("ZREM", KEYS[3], ARGV[1])
local next = redis.call("LINDEX", KEYS[2], 0)
if first == ARGV[1] and next and redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("PUBLISH", ARGV[2] .. string.match(next, "^[^:]*"), next)
end
return 1
