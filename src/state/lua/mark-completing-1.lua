--[[
  The last step of a run's finalize before it ends `completed`: marks the run
  `completing` unless a cancel was asked for. Once marked, lua/cancel-run-1.lua
  refuses a cancel (the run ends completed); a cancel asked for before wins
  (the run ends cancelled). Marking again is a no-op, so a finalize resumed
  after a crash completes as the first would have. A run record that is gone
  is not made again here (its end fails as it would have).

  Input:
    KEYS[1]  the run's hash
    ARGV[1]  now (epoch ms)

  Output:
    1 when the run is marked completing (or is gone), 0 when a cancel was asked for
]]
if redis.call('HEXISTS', KEYS[1], 'cancelRequested') == 1 then return 0 end
if redis.call('HEXISTS', KEYS[1], 'status') == 1 and redis.call('HEXISTS', KEYS[1], 'completing') == 0 then
  redis.call('HSET', KEYS[1], 'completing', ARGV[1])
end
return 1
