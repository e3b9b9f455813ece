--[[
  HSET of many hash fields in one call (the keys all under one hash tag).

  Input:
    KEYS[i]          a hash, one per field (a key may repeat)
    ARGV[2 * i - 1]  the field of KEYS[i]
    ARGV[2 * i]      its value

  Output:
    the number of fields that were new
]]
local n = 0
for i = 1, #KEYS do n = n + redis.call('HSET', KEYS[i], ARGV[2 * i - 1], ARGV[2 * i]) end
return n
