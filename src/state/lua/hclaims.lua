--[[
  Sets each hash field if absent, and answers who holds it now: the first
  writer wins (the keys all under one hash tag).

  Input:
    KEYS[i]          a hash, one per field (a key may repeat)
    ARGV[2 * i - 1]  the field of KEYS[i]
    ARGV[2 * i]      the value to set if the field is absent

  Output:
    each field's value after, in order
]]
local out = {}
for i = 1, #KEYS do
  redis.call('HSETNX', KEYS[i], ARGV[2 * i - 1], ARGV[2 * i])
  out[i] = redis.call('HGET', KEYS[i], ARGV[2 * i - 1])
end
return out
