-- unlock.lua gives back one hold of the request ARGV[2] of the process ARGV[1] (its owner is
-- "process:request") on the lock KEYS[1]. Returns -1 when the request does not hold it (its lease
-- ran out, or another request holds it now), 0 when that was its last hold: the lock is deleted and
-- the first waiter in the line KEYS[2] is told its turn has come, and the holds it has left
-- otherwise. A waiter is told on its process's channel (ARGV[3] followed by the process's part of
-- its owner, before the colon), with its owner as the message. The article's script answers 0 both
-- for "still held" and for "not yours"; a caller must be able to tell them apart.
local owner = ARGV[1] .. ":" .. ARGV[2]
local holds = tonumber(redis.call("HGET", KEYS[1], owner))
if not holds then
  return -1
end
if holds > 1 then
  return redis.call("HINCRBY", KEYS[1], owner, -1)
end
redis.call("DEL", KEYS[1])
local first = redis.call("LINDEX", KEYS[2], 0)
if first then
  redis.call("PUBLISH", ARGV[3] .. string.match(first, "^[^:]*"), first)
end
return 0
