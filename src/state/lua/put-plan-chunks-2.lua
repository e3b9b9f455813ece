--[[
  Stores chunks of a run's planned writes (or removes them). `n:<first>`
  keeps each chunk's count, `total` the sum, `u:<first>` the chunk's
  unsettled lines: all of them (only planning writes chunks).

  Input:
    KEYS[1]   the run's plan hash
    KEYS[2]   its chunk index (a sorted set, score the chunk's first line)
    ARGV[1]   the TTL of both, ms
    ARGV[2..] per chunk three: its first line, its number of writes, its
              deflated body (0 writes: the chunk is removed)

  Output:
    the change in the plan's total of writes
]]
local delta = 0
for i = 2, #ARGV, 3 do
  local f, n = ARGV[i], tonumber(ARGV[i + 1])
  local old = tonumber(redis.call('HGET', KEYS[1], 'n:' .. f) or '0')
  if n == 0 then
    redis.call('HDEL', KEYS[1], f, 'n:' .. f, 'u:' .. f)
    redis.call('ZREM', KEYS[2], f)
  else
    redis.call('HSET', KEYS[1], f, ARGV[i + 2], 'n:' .. f, n, 'u:' .. f, n)
    redis.call('ZADD', KEYS[2], f, f)
  end
  delta = delta + n - old
end
if delta ~= 0 then redis.call('HINCRBY', KEYS[1], 'total', delta) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return delta
