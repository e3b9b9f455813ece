--[[
  Fails a run only while it is still active and not of this layout: one
  that ended, or was stamped with this layout, since it was listed is left
  alone (crm-sync migrate).

  Input:
    KEYS[1]  the run hash
    ARGV[1]  finishedAt, ms
    ARGV[2]  the error it is failed with
    ARGV[3]  this layout version
    ARGV[4]  the run hash's layout field
    ARGV[5..] the active statuses

  Output:
    1 failed, 0 left alone
]]
local s = redis.call('HGET', KEYS[1], 'status')
if redis.call('HGET', KEYS[1], ARGV[4]) == ARGV[3] then return 0 end
for i = 5, #ARGV do
  if s == ARGV[i] then
    redis.call('HSET', KEYS[1], 'status', 'failed', 'finishedAt', ARGV[1], 'error', ARGV[2])
    return 1
  end
end
return 0
