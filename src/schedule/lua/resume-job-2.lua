--[[
  Resumes a paused job's schedule: deletes the pause and moves the job's
  last fired slot forward to the resume instant (never back), so the slots
  passed while it was paused are neither run nor reported as missed. A job
  that was not paused is left alone.

  Input:
    KEYS[1]  the job's pause hash
    KEYS[2]  the job's last-slot marker
    ARGV[1]  the resume instant as a slot (an ISO time: later sorts after)

  Output:
    1 resumed, 0 it was not paused
]]
if redis.call('DEL', KEYS[1]) == 0 then return 0 end
local cur = redis.call('GET', KEYS[2])
if (not cur) or cur < ARGV[1] then redis.call('SET', KEYS[2], ARGV[1]) end
return 1
