--[[
  Forgets runs that have ended (a run not ended is kept, however old): their
  keys, their entries in the run lists and their number.

  Input (the key count first: 3 + runs * per):
    KEYS[1]  the all-runs list
    KEYS[2]  the job's run list
    KEYS[3]  the run numbers hash (`r:<id>` -> n, `s:<n>` -> id)
    KEYS[4..] per run, `per` keys: its record (the run hash) first, then its
             failure rows and its progress keys
    ARGV[1]  per
    ARGV[2..] the run ids, in the order of their keys

  Output:
    how many runs were forgotten
]]
local per = tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local base = 3 + (i - 2) * per
  local status = redis.call('HGET', KEYS[base + 1], 'status')
  if status == false or status == 'completed' or status == 'failed' or status == 'stopped'
    or status == 'cancelled' then
    for k = base + 1, base + per do redis.call('UNLINK', KEYS[k]) end
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZREM', KEYS[2], id)
    local number = redis.call('HGET', KEYS[3], 'r:' .. id)
    if number then redis.call('HDEL', KEYS[3], 'r:' .. id, 's:' .. number) end
    n = n + 1
  end
end
return n
