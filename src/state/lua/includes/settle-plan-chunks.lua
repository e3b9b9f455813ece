--[[
  A Lua function for the script that settles writes (finish-writes.lua):
  `settlePlanChunks(plan, index, unknown, firsts, settled)` counts down each
  chunk of `firsts` (first lines, as strings) by `settled[first]` lines that
  settled for the first time, once per chunk, and drops a chunk left with no
  unsettled line unless a line of its range [first, next chunk's first) is an
  unknown create (set `unknown`), read after the script has added its own. A
  chunk without a count (stored before counts, or the plan expired) is kept.
  A dropped chunk keeps its entry in the index and an empty body: a scan's
  pages keep their bounds, and a line of it finds its own chunk, empty, not
  the one before. (The enqueuer, scanning again after a restart, cuts its
  write jobs within each chunk, so the chunks left give the same jobs, which
  the queue knows by their ids.)
  `pinPlanChunk(plan, index, line)` keeps the chunk of `line` to the run's end:
  for a line that leaves the unknown creates with its pending marks kept
  (finalize still verifies it by its planned write).

  EMPTY_CHUNK is what a dropped chunk's body becomes: `[]` deflated (4
  bytes; planned-writes.ts), not nothing, so that every reader, one of an
  earlier release included, reads a chunk with no writes left where it was.
  256 is MAX_UNKNOWN_READ (planned-writes.ts); a unit test keeps both equal.
]]
local EMPTY_CHUNK = '\139\142\5\0'
local function settlePlanChunks(plan, index, unknown, firsts, settled)
  local unknownLines
  for _, c in ipairs(firsts) do
    local left = redis.call('HINCRBY', plan, 'u:' .. c, -settled[c])
    if left < 0 then
      redis.call('HDEL', plan, 'u:' .. c)
    elseif left == 0 then
      if unknownLines == nil then
        local size = redis.call('SCARD', unknown)
        if size == 0 then unknownLines = {}
        elseif size <= 256 then unknownLines = redis.call('SMEMBERS', unknown)
        else unknownLines = false end
      end
      local keep = unknownLines == false
      if not keep and #unknownLines > 0 then
        local lo = tonumber(c)
        local nx = redis.call('ZRANGEBYSCORE', index, '(' .. c, '+inf', 'LIMIT', 0, 1)[1]
        local hi = nx and tonumber(nx)
        for _, l in ipairs(unknownLines) do
          local v = tonumber(l)
          if v >= lo and (hi == nil or v < hi) then keep = true break end
        end
      end
      if not keep then
        redis.call('HSET', plan, c, EMPTY_CHUNK)
        redis.call('HDEL', plan, 'n:' .. c, 'u:' .. c)
      end
    end
  end
end
local function pinPlanChunk(plan, index, line)
  local c = redis.call('ZREVRANGEBYSCORE', index, line, '-inf', 'LIMIT', 0, 1)[1]
  if c and redis.call('HEXISTS', plan, 'u:' .. c) == 1 then redis.call('HINCRBY', plan, 'u:' .. c, 1) end
end
