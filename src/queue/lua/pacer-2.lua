--[[
  The pacer's one script, three operations, all on Redis' clock
  (src/queue/pacer-store.ts; the numbers 200, 128, 100 and 32 and the
  state's field names below are HORIZON_MS, LOG_SLOTS, RECENT_SLOT_MS,
  RECENT_SLOTS and STATE_FIELDS there, a unit test keeps them equal).

  Input:
    KEYS[1]  the pacer hash: `tat` (the next free turn, ms), `notBefore` (no
             turn before it: a 429's Retry-After), `ok` (successes of every
             replica), `v` (the learner state's version), the learner state
    KEYS[2]  the success log: field `second % 128` -> `second:count`, and
             per 100 ms field `d<tenth % 32>` -> `tenth:count`
    ARGV[1]  the operation, then its arguments:
      grant want ok fixedRate startRate lateMs
               adds `ok` successes (total, and this second's and this
               tenth's log slots), moves
               the next free turn `lateMs` later, books up to `want` turns
               (at most the 200 ms horizon's; rate `fixedRate`, or the
               learned one when that is 0, else `startRate`)
      set version holdMs field value ...
               holds every turn until now + holdMs (if later than the hold
               already set), then, if the state's version is still `version`
               (or it is `-`), writes the fields and bumps the version
      log

  Output:
    grant  [now, first, interval, count, version, ok total, ...state fields]
    set    1, or 0 when another replica changed the state first
    log    the success log, as [slot, "second:count", ..., "d"slot, "tenth:count", ...]
]]
local key, logKey = KEYS[1], KEYS[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local op = ARGV[1]
if op == 'log' then return redis.call('HGETALL', logKey) end
if op == 'set' then
  local hold = tonumber(ARGV[3])
  if hold > 0 then
    local nb = tonumber(redis.call('HGET', key, 'notBefore') or '0')
    if now + hold > nb then redis.call('HSET', key, 'notBefore', now + hold) end
  end
  if #ARGV < 5 then return 1 end
  local v = redis.call('HGET', key, 'v') or '0'
  if ARGV[2] ~= '-' and ARGV[2] ~= v then return 0 end
  redis.call('HSET', key, unpack(ARGV, 4))
  redis.call('HINCRBY', key, 'v', 1)
  return 1
end
local want, ok, fixed = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local f = redis.call('HMGET', key, 'tat', 'notBefore', 'ok', 'v', 'rate', 'ceiling', 'periodMs', 'changedAt', 'okAtChange', 'ceilingAt', 'decreasedAt', 'refillUntil', 'source')
local rate = fixed
if rate <= 0 then rate = tonumber(f[5]) or tonumber(ARGV[5]) end
local tat, nb = (tonumber(f[1]) or 0) + tonumber(ARGV[6] or '0'), tonumber(f[2]) or 0
local total = (tonumber(f[3]) or 0) + ok
local interval = 1000 / rate
local first = math.max(tat, now, nb)
local n = 0
local writes = {}
if want > 0 then
  n = math.min(want, math.floor(200 / interval) + 1)
  writes[#writes + 1] = 'tat'
  writes[#writes + 1] = tostring(first + n * interval)
end
if ok > 0 then
  writes[#writes + 1] = 'ok'
  writes[#writes + 1] = tostring(total)
end
if #writes > 0 then redis.call('HSET', key, unpack(writes)) end
if ok > 0 then
  local sec = math.floor(now / 1000)
  local ds = math.floor(now / 100)
  local slot = sec % 128
  local dslot = 'd' .. (ds % 32)
  local cur = redis.call('HMGET', logKey, slot, dslot)
  local function add(v, at)
    if v then
      local s, k = string.match(v, '^(%d+):(%d+)$')
      if tonumber(s) == at then return at .. ':' .. (tonumber(k) + ok) end
    end
    return at .. ':' .. ok
  end
  redis.call('HSET', logKey, slot, add(cur[1], sec), dslot, add(cur[2], ds))
end
local out = {tostring(now), tostring(first), tostring(interval), n, f[4] or '0', tostring(total)}
for i = 5, #f do out[#out + 1] = f[i] or '' end
return out
