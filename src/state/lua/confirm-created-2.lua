--[[
  Counts as created the unknown creates a listing found, each line once.

  Input:
    KEYS[1]  the run's unknown-creates set (lines)
    KEYS[2]  the run hash
    ARGV[1]  the run hash's unknown-creates counter field
    ARGV[2]  its created counter field
    ARGV[3..] the lines found on the platform

  Output:
    the lines moved from one counter to the other
]]
local n = 0
for i = 3, #ARGV do n = n + redis.call('SREM', KEYS[1], ARGV[i]) end
if n > 0 then
  redis.call('HINCRBY', KEYS[2], ARGV[1], -n)
  redis.call('HINCRBY', KEYS[2], ARGV[2], n)
end
return n
