--[[
  The plan chunks holding some lines: each distinct chunk holding one of the
  lines (the chunk with the greatest first line not above it). A line inside
  the last chunk found (below the next chunk's first line) needs no lookup:
  a write chunk's lines are consecutive, so most lines cost none.

  Input:
    KEYS[1]  the run's plan hash
    KEYS[2]  its chunk index
    ARGV     the lines, in order

  Output:
    first line, body, ... of each chunk found that has a body
]]
local out, seen, lo, hi = {}, {}, nil, nil
for i = 1, #ARGV do
  local line = tonumber(ARGV[i])
  if not (lo and line >= lo and (hi == nil or line < hi)) then
    local c = redis.call('ZREVRANGEBYSCORE', KEYS[2], ARGV[i], '-inf', 'LIMIT', 0, 1)[1]
    lo, hi = nil, nil
    if c then
      lo = tonumber(c)
      local n = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. c, '+inf', 'LIMIT', 0, 1)[1]
      if n then hi = tonumber(n) end
      if not seen[c] then
        seen[c] = true
        local body = redis.call('HGET', KEYS[1], c)
        if body then
          out[#out + 1] = c
          out[#out + 1] = body
        end
      end
    end
  end
end
return out
