-- leave.lua takes the request ARGV[1] out of the line KEYS[2] and its deadline out of KEYS[3]. If
-- it was first in line and the lock KEYS[1] is free, the turn passes on: the next waiter is told
-- on its own channel (ARGV[2] followed by its owner), as unlock.lua would tell it.
local first = redis.call("LINDEX", KEYS[2], 0)
redis.call("LREM", KEYS[2], 0, ARGV[1])
redis.call("ZREM", KEYS[3], ARGV[1])
if first == ARGV[1] and redis.call("EXISTS", KEYS[1]) == 0 then
  local next = redis.call("LINDEX", KEYS[2], 0)
  if next then
    redis.call("PUBLISH", ARGV[2] .. next, "your turn")
  end
end
return 1
