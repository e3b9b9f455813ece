--[[
  Moves a job definition's last fired slot forward, never back: two
  replicas, or a slow firing, never rewind it.

  Input:
    KEYS[1]  the job's last-slot marker
    ARGV[1]  the slot fired (an ISO time: later sorts after)

  Output:
    1 moved, 0 already at or past it
]]
local cur = redis.call('GET', KEYS[1])
if (not cur) or cur < ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0
