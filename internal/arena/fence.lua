-- The inventory's fenced read or write, in one atomic step. KEYS: stock, sequence, fence.
-- ARGV[1] is the token; ARGV[2], when present, is the stock to write. A token lower than the
-- highest one seen is refused: a monotonic check, so a stale holder that comes first cannot
-- lock out the newer one (an equality check would).
-- Returns {sequence number, 1 if accepted else 0, the stock (read, written, or as it stands)}.
local seq = redis.call('INCR', KEYS[2])
local top = tonumber(redis.call('GET', KEYS[3]) or '0')
local token = tonumber(ARGV[1])
if token < top then
  return {seq, 0, tonumber(redis.call('GET', KEYS[1]) or '0')}
end
redis.call('SET', KEYS[3], token)
if ARGV[2] then
  redis.call('SET', KEYS[1], ARGV[2])
  return {seq, 1, tonumber(ARGV[2])}
end
return {seq, 1, tonumber(redis.call('GET', KEYS[1]) or '0')}
