--[[
  Asks a run to cancel, unless it has ended or is completing: marks it
  `cancelRequested`; a run no worker has taken yet (queued) ends `cancelled`
  at once. A run a worker has is ended by its worker once its writes in
  flight have settled (src/engine/run.ts); lua/claim-writes.lua refuses its
  writes from now on. A run whose finalize has marked it `completing`
  (lua/mark-completing-1.lua: every write settled and verified) ends
  `completed`: the cancel is refused.

  Input:
    KEYS[1]  the run's hash
    ARGV[1]  now (epoch ms)

  Output:
    false for no run; {0, status} when it had ended; {2, status} when it is
    completing; {1, status} when the cancel was taken (status `cancelled` for
    a queued run)
]]
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return false end
if status == 'completed' or status == 'failed' or status == 'stopped' or status == 'cancelled' then
  return {0, status}
end
if redis.call('HEXISTS', KEYS[1], 'completing') == 1 then return {2, status} end
redis.call('HSET', KEYS[1], 'cancelRequested', ARGV[1])
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'phase', 'cancelled before it started', 'finishedAt', ARGV[1])
  return {1, 'cancelled'}
end
return {1, status}
