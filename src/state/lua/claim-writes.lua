--[[
  Claims writes of one run and entity before their requests, each on its own
  and in order (a later one sees what an earlier one marked pending): is the
  run still taking writes (not ended, not asked to cancel), has the line
  settled already, and for a create the
  atomic claim of its identity keys (refused when a key is pending or already
  mapped; otherwise every key is marked pending). The run is read once.

  Input (the key count first):
    KEYS[1]   the run hash
    KEYS[2]   its settled set (lines)
    KEYS[3]   the entity's pending hash (identity key -> pending value)
    KEYS[4..] identity-map buckets, named by index below
    ARGV[1]   the pending value (packed: run and since)
    ARGV[2..] per write: its line, '1' for a create ('0' for an update), its
              number of identity keys n, then n pairs (bucket index in KEYS, key)

  Output:
    one answer per write, in order: 'ended', 'settled', 'pending', 'exists' or 'go'
]]
local status = redis.call('HGET', KEYS[1], 'status')
local ended = (not status) or status == 'failed' or status == 'completed'
  or status == 'cancelled' or redis.call('HEXISTS', KEYS[1], 'cancelRequested') == 1
local out = {}
local i = 2
while i <= #ARGV do
  local line, create, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local first, last = i + 3, i + 2 + 2 * n
  i = last + 1
  local r
  if ended then r = 'ended'
  elseif redis.call('SISMEMBER', KEYS[2], line) == 1 then r = 'settled'
  elseif create == '0' then r = 'go'
  else
    for j = first, last, 2 do
      local key = ARGV[j + 1]
      if redis.call('HEXISTS', KEYS[3], key) == 1 then r = 'pending' break end
      if redis.call('HEXISTS', KEYS[tonumber(ARGV[j])], key) == 1 then r = 'exists' break end
    end
    if not r then
      local fields = {}
      for j = first, last, 2 do fields[#fields + 1] = ARGV[j + 1]; fields[#fields + 1] = ARGV[1] end
      if #fields > 0 then redis.call('HSET', KEYS[3], unpack(fields)) end
      r = 'go'
    end
  end
  out[#out + 1] = r
end
return out
