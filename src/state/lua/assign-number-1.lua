--[[
  The number of a name, the next one assigned on first use (numbering.ts).

  Input:
    KEYS[1]  the numbers hash: `r:<name>` -> n, `s:<n>` -> name, `n` the last given
    ARGV[1]  the name

  Output:
    its number
]]
local n = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if n then return tonumber(n) end
n = redis.call('HINCRBY', KEYS[1], 'n', 1)
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], n, 's:' .. n, ARGV[1])
return n
