-- unlock.lua gives back one hold of the request ARGV[1] on the lock KEYS[1]. Returns -1 when the
-- request does not hold it (its lease ran out, or another request holds it now), 0 when that was
-- its last hold: the lock is deleted and the first waiter in the line KEYS[2], only it, is told on
-- its own channel (ARGV[2] followed by its owner), and the holds it has left otherwise.
if redis.call("HEXISTS", KEYS[1], ARGV[1]) == 0 then
  return -1
end
local holds = redis.call("HINCRBY", KEYS[1], ARGV[1], -1)
if holds > 0 then
  return holds
end
redis.call("DEL", KEYS[1])
local first = redis.call("LINDEX", KEYS[2], 0)
if first then
  redis.call("PUBLISH", ARGV[2] .. first, "your turn")
end
return 0
