-- unlock.lua deletes KEYS[1] only if it still holds ARGV[1], the caller's owner token. Redis runs a
-- script as one command, so no other command can fall between the check and the delete.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
