--[[
  Releases the pending marks of a create that did not land, unless its line
  has settled meanwhile (another attempt, which took the chunk over, settled
  it pending: finalize verifies those marks).

  Input:
    KEYS[1]   the run's settled set
    KEYS[2]   the entity's pending hash
    ARGV[1]   the line
    ARGV[2..] the create's identity keys

  Output:
    the marks released (0 when the line has settled)
]]
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
return redis.call('HDEL', KEYS[2], unpack(ARGV, 2))
