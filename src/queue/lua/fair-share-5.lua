--[[
  Who goes next among the runs writing at once: the rules of
  src/queue/fair-share.ts (`observe`, then `assign`, `backlog` or
  `landed`), run on the state in KEYS[1] together with the reading of the
  write queue, so that every worker process decides from one state. The
  numbers 1000, 2097151, 1048576, 60000 and 30000 are ROUND,
  PRIORITY_LIMIT, REBASE_AT, REBASE_IDLE_MS and ON_THE_WAY_MS there; a test
  keeps script and module equal.

  Input:
    KEYS[1]  the share: `v` (the current round's start, in thousandths of
             a round), `u` (a round's lines of a run of weight 1), `at`
             (ms of the last assign, Redis' clock), `r:<runId>` (the tag
             after the run's last chunk), `w:<runId>` (ms of an assign
             whose chunks are on their way to the queue)
    KEYS[2]  the write queue's prioritized set (BullMQ: score = priority *
             2^32 + a counter)
    KEYS[3]  its delayed set
    KEYS[4]  its wait list
    KEYS[5]  its active list
    ARGV[1]  the operation, ARGV[2] the run, ARGV[3] the lines of its
             chunks (the round's unit while nothing waits), then:
      assign runId unit weight lines ...
               tags the run's next chunks, of these lines, in order
      backlog runId unit
      landed runId unit
               the run's chunks tagged so far are in the queue

  Output:
    assign   the chunks' priorities, in order
    backlog  how far (units) the run's chunks reach past the current
             round, and the round's unit
    landed   nothing
]]
local ROUND, LIMIT, REBASE_AT, REBASE_IDLE_MS, ON_THE_WAY_MS = 1000, 2097151, 1048576, 60000, 30000
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local flat = redis.call('HGETALL', key)
local hash = {}
for i = 1, #flat, 2 do hash[flat[i]] = flat[i + 1] end
local v = tonumber(hash['v'] or ROUND)
local u = tonumber(hash['u'] or 0)
local at = tonumber(hash['at'] or 0)
local head = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')

-- observe
local gone = {}
local landing = false
for i = 1, #flat, 2 do
  if string.sub(flat[i], 1, 2) == 'w:' then
    if now - tonumber(flat[i + 1]) < ON_THE_WAY_MS then
      landing = true
    else
      gone[#gone + 1] = flat[i]
    end
  end
end
if #head > 0 then
  local h = math.floor(tonumber(head[2]) / 4294967296) * ROUND
  if h > v then v = h end
  if u <= 0 then u = tonumber(ARGV[3]) end
  for i = 1, #flat, 2 do
    if string.sub(flat[i], 1, 2) == 'r:' and tonumber(flat[i + 1]) <= v then
      gone[#gone + 1] = flat[i]
    end
  end
elseif not landing then
  for i = 1, #flat, 2 do
    if string.sub(flat[i], 1, 2) == 'r:' then
      local tag = tonumber(flat[i + 1])
      if tag > v then v = tag end
      gone[#gone + 1] = flat[i]
    end
  end
  local idle = redis.call('ZCARD', KEYS[3]) == 0 and redis.call('LLEN', KEYS[4]) == 0
    and redis.call('LLEN', KEYS[5]) == 0
  if idle and v >= REBASE_AT * ROUND and now - at >= REBASE_IDLE_MS then v = ROUND end
  u = tonumber(ARGV[3])
end
if #gone > 0 then redis.call('HDEL', key, unpack(gone)) end
for _, f in ipairs(gone) do hash[f] = nil end
redis.call('HSET', key, 'v', tostring(v), 'u', tostring(u))

local field = 'r:' .. ARGV[2]
local last = tonumber(hash[field] or 0)
if ARGV[1] == 'backlog' then
  -- Rounds past LIMIT count as one: the current round cannot pass it.
  local reach = math.min(last, (LIMIT + 1) * ROUND)
  if reach > v then return { reach - v, u } end
  return { 0, u }
end
if ARGV[1] == 'landed' then
  redis.call('HDEL', key, 'w:' .. ARGV[2])
  return {}
end

local weight = tonumber(ARGV[4])
local tag = last
if v > tag then tag = v end
local out = {}
for i = 5, #ARGV do
  local p = math.floor(tag / ROUND)
  if p < 1 then p = 1 end
  if p > LIMIT then p = LIMIT end
  out[#out + 1] = p
  local cost = math.ceil(tonumber(ARGV[i]) * ROUND / (u * weight))
  if cost < 1 then cost = 1 end
  tag = tag + cost
end
redis.call('HSET', key, field, tostring(tag), 'at', tostring(now), 'w:' .. ARGV[2], tostring(now))
return out
