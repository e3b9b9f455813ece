--[[
  A page of a run's plan: up to a number of chunks from a first line on, in
  line order.

  Input:
    KEYS[1]  the run's plan hash
    KEYS[2]  its chunk index
    ARGV[1]  the lowest first line
    ARGV[2]  the number of chunks

  Output:
    first line, body, ... of each chunk (a chunk without a body: '')
]]
local firsts = redis.call('ZRANGEBYSCORE', KEYS[2], ARGV[1], '+inf', 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
if #firsts == 0 then return out end
local bodies = redis.call('HMGET', KEYS[1], unpack(firsts))
for i = 1, #firsts do
  out[#out + 1] = firsts[i]
  out[#out + 1] = bodies[i] or ''
end
return out
