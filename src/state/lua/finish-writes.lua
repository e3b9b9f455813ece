--[[
  Settles a batch of writes that ended, in one script, so a record is never
  committed without its line settled: records the confirmed ones (identity
  keys -> platform id, the record's state, their pending marks cleared),
  clears the pending marks of creates that did not land, settles each line
  once (counted, its failure row kept, an unknown create answered later moved
  to its counter) and drops the run's plan chunks whose lines have all
  settled (includes/settle-plan-chunks.lua).

  Input (the key count first):
    KEYS[1]   the run's settled set
    KEYS[2]   the run hash
    KEYS[3]   its failures list
    KEYS[4]   its unknown-creates set
    KEYS[5]   the entity's pending hash
    KEYS[6]   the entity's info hash
    KEYS[7]   the run's plan hash
    KEYS[8]   its plan chunk index
    KEYS[9..] record and identity-map buckets, named by index below
    ARGV[1]   now, ms
    ARGV[2]   the run hash's unknown-creates counter field
    ARGV[3]   its settled-writes counter field
    ARGV[4]   its planned-writes counter field
    ARGV[5]   the number of writes
    ARGV[6..] per write 8 values: line, counter field, failure JSON ('' for
              none), record bucket index in KEYS (0: no commit), platform id,
              packed record state, plan chunk's first line ('' for none), its
              number of identity keys n; then n pairs (bucket index in KEYS,
              or 0 without a commit; key)

  Output:
    {settled writes, planned writes, then per write 1 if this call settled
    its line, 0 if it had settled before}
]]
--- @include "settle-plan-chunks"
local now, unknown, settledField, plannedField = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local count = tonumber(ARGV[5])
local incr, order, firsts, failures, clear = {}, {}, {}, {}, {}
local chunkSettled, chunks = {}, {}
local added, committed = 0, false
local function add(field, n)
  if incr[field] == nil then incr[field] = 0; order[#order + 1] = field end
  incr[field] = incr[field] + n
end
local a = 6
for e = 1, count do
  local line, counter, failure = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  local recIx, id, rec = tonumber(ARGV[a + 3]), ARGV[a + 4], ARGV[a + 5]
  local chunk, n = ARGV[a + 6], tonumber(ARGV[a + 7])
  a = a + 8
  local first = redis.call('SADD', KEYS[1], line) == 1
  for j = 1, n do
    local ix, key = tonumber(ARGV[a]), ARGV[a + 1]
    a = a + 2
    if recIx > 0 then redis.call('HSET', KEYS[ix], key, id) end
    -- A create that did not land releases its marks only while its line is unsettled: once
    -- another attempt settled it (pending), the marks are what finalize verifies.
    if recIx > 0 or first then clear[#clear + 1] = key end
  end
  if recIx > 0 then
    committed = true
    added = added + redis.call('HSET', KEYS[recIx], id, rec)
  end
  if not first then
    firsts[#firsts + 1] = 0
    if counter ~= unknown and redis.call('SREM', KEYS[4], line) == 1 then
      add(unknown, -1)
      add(counter, 1)
      if failure ~= '' then failures[#failures + 1] = failure end
      -- Its pending marks stay (see above) for finalize, which finds the line by its plan.
      if recIx == 0 then pinPlanChunk(KEYS[7], KEYS[8], line) end
    end
  else
    firsts[#firsts + 1] = 1
    if counter == unknown then redis.call('SADD', KEYS[4], line) end
    add(counter, 1)
    add(settledField, 1)
    if failure ~= '' then failures[#failures + 1] = failure end
    if chunk ~= '' then
      if chunkSettled[chunk] == nil then chunkSettled[chunk] = 0; chunks[#chunks + 1] = chunk end
      chunkSettled[chunk] = chunkSettled[chunk] + 1
    end
  end
end
settlePlanChunks(KEYS[7], KEYS[8], KEYS[4], chunks, chunkSettled)
if #clear > 0 then redis.call('HDEL', KEYS[5], unpack(clear)) end
if committed then redis.call('HSETNX', KEYS[6], 'firstCommitAt', now) end
if added > 0 then redis.call('HINCRBY', KEYS[6], 'records', added) end
for _, field in ipairs(order) do
  if incr[field] ~= 0 then redis.call('HINCRBY', KEYS[2], field, incr[field]) end
end
if #failures > 0 then redis.call('RPUSH', KEYS[3], unpack(failures)) end
local got = redis.call('HMGET', KEYS[2], settledField, plannedField)
local reply = {tonumber(got[1] or '0'), tonumber(got[2] or '0')}
for _, f in ipairs(firsts) do reply[#reply + 1] = f end
return reply
