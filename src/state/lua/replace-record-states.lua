--[[
  Replaces record state values, each only if it is still the one read
  (compare-and-set; crm-sync migrate, layout 1 to 2).

  Input (the key count first):
    KEYS      record state buckets
    ARGV      per value, four: the index of its bucket in KEYS, its field,
              the value read, the new value

  Output:
    how many values were replaced
]]
local n = 0
for i = 1, #ARGV, 4 do
  local key = KEYS[tonumber(ARGV[i])]
  if redis.call('HGET', key, ARGV[i + 1]) == ARGV[i + 2] then
    redis.call('HSET', key, ARGV[i + 1], ARGV[i + 3])
    n = n + 1
  end
end
return n
