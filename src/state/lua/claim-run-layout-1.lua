--[[
  The layout version of a run: the one stamped on it; else, if it has not
  started yet, the caller's, stamped now; else 1 (a run of a release from
  before versions were stamped).

  Input:
    KEYS[1]  the run hash
    ARGV[1]  its layout field
    ARGV[2]  the caller's layout version

  Output:
    the run's layout version
]]
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then return tonumber(v) end
if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return 1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return tonumber(ARGV[2])
