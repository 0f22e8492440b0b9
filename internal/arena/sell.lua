-- The inventory's atomic sale: one unit off the shelf only if one is left. KEYS: stock, sequence.
-- Returns {sequence number, 1 if sold else 0, the stock left}.
local seq = redis.call('INCR', KEYS[2])
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n <= 0 then
  return {seq, 0, n}
end
redis.call('SET', KEYS[1], n - 1)
return {seq, 1, n - 1}
