--[[
  Creates a run only if it does not exist: a run created again after a crash
  keeps its counters.

  Input:
    KEYS[1]  the run hash
    KEYS[2]  the all-runs list (a sorted set by creation time)
    KEYS[3]  the job's run list (the same)
    ARGV[1]  the creation time, ms
    ARGV[2]  the run id
    ARGV[3..] the run hash's fields and values, in pairs

  Output:
    1 created, 0 there already
]]
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[1], ARGV[2])
return 1
