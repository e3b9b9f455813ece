--[[
  Forgets settled lines, so a write sent again settles again. Each line
  removed from the settled lines counts one more unsettled line of its plan
  chunk (the chunk with the greatest first line not above it, kept since the
  line was an unknown create; a chunk without a count is left so).

  Input:
    KEYS[1]  the run's settled set
    KEYS[2]  its unknown-creates set
    KEYS[3]  its plan hash (`u:<chunk>`: the chunk's unsettled lines)
    KEYS[4]  its plan chunk index (a sorted set, score the chunk's first line)
    ARGV     the lines

  Output:
    the lines unsettled
]]
local up, chunks, n = {}, {}, 0
for i = 1, #ARGV do
  redis.call('SREM', KEYS[2], ARGV[i])
  if redis.call('SREM', KEYS[1], ARGV[i]) == 1 then
    n = n + 1
    local c = redis.call('ZREVRANGEBYSCORE', KEYS[4], ARGV[i], '-inf', 'LIMIT', 0, 1)[1]
    if c then
      if up[c] == nil then up[c] = 0; chunks[#chunks + 1] = c end
      up[c] = up[c] + 1
    end
  end
end
for _, c in ipairs(chunks) do
  if redis.call('HEXISTS', KEYS[3], 'u:' .. c) == 1 then redis.call('HINCRBY', KEYS[3], 'u:' .. c, up[c]) end
end
return n
