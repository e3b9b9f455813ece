--[[
  HGET of many hash fields in one call (the keys all under one hash tag).

  Input:
    KEYS[i]  a hash, one per field (a key may repeat)
    ARGV[i]  the field of KEYS[i] to read

  Output:
    the values, in order (false, nil to the client, where absent)
]]
local out = {}
for i = 1, #KEYS do out[i] = redis.call('HGET', KEYS[i], ARGV[i]) end
return out
