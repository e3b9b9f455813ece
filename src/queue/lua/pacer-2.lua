--[[
  The pacer's one script, three operations, all on Redis' clock
  (src/queue/pacer-store.ts; the numbers 200, 128, 10, 256 and 16 and the
  state's field names below are HORIZON_MS, LOG_SLOTS, RECENT_SLOT_MS,
  RECENT_SLOTS, MAX_ECHOES and STATE_FIELDS there, a unit test keeps them
  equal).

  Input:
    KEYS[1]  the pacer hash: `tat` (the next free turn, ms), `notBefore` (no
             turn before it: a 429's Retry-After), `ok` (successes of every
             replica), `booked` (turns booked by every replica), `echo` (the
             window's echoes: `from:until,...`, sorted), `moved` (ms the
             echoes moved the schedule, in all), `v` (the learner state's
             version), the learner state
    KEYS[2]  the success log by the time each request went out: field
             `second % 128` -> `second:count`, and per 10 ms field
             `d<slot % 256>` -> `slot:count`
    ARGV[1]  the operation, then its arguments:
      grant want oks fixedRate startRate echoes [horizonMs]
               adds the successes `oks` (`slot:count,...`, slots of 10 ms
               when each request went out) to the total and the log, adds
               the `echoes` (`from:until,...`) to the stored ones, books up
               to `want` turns (at most a horizon's: `horizonMs`, 200 ms
               when not given; rate
               `fixedRate`, or the learned one when that is 0, else
               `startRate`), spaced from the next free turn; a turn that
               falls inside an echo goes at its end, and the turns after
               it are spaced from there
      set version holdMs field value ...
               holds every turn until now + holdMs (if later than the hold
               already set), then, if the state's version is still `version`
               (or it is `-`), writes the fields and bumps the version
      log

  Output:
    grant  [now, first, interval, count, version, ok total, booked total,
            ...state fields, ...moves: the turn i and the time it moved to,
            the turns after it spaced from there]
    set    1, or 0 when another replica changed the state first
    log    the success log, as [slot, "second:count", ..., "d"slot, "slot:count", ...]
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

local function pairsOf(text)
  local out = {}
  for a, b in string.gmatch(text or '', '(%d+):(%d+)') do
    out[#out + 1] = {tonumber(a), tonumber(b)}
  end
  return out
end

local want, fixed = tonumber(ARGV[2]), tonumber(ARGV[4])
local horizon = tonumber(ARGV[7]) or 200
local oks = pairsOf(ARGV[3])
local f = redis.call('HMGET', key, 'tat', 'notBefore', 'ok', 'v', 'booked', 'echo', 'rate', 'ceiling', 'periodMs', 'changedAt', 'okAtChange', 'bookedAtChange', 'ceilingAt', 'probeMs', 'decreasedAt', 'refillUntil', 'source')
local rate = fixed
if rate <= 0 then rate = tonumber(f[7]) or tonumber(ARGV[5]) end
local tat, nb = tonumber(f[1]) or 0, tonumber(f[2]) or 0
local ok = 0
for _, p in ipairs(oks) do ok = ok + p[2] end
local total = (tonumber(f[3]) or 0) + ok
local booked = tonumber(f[5]) or 0
local interval = 1000 / rate
local first = math.max(tat, now, nb)
local writes = {}
if ok > 0 then
  writes[#writes + 1] = 'ok'
  writes[#writes + 1] = tostring(total)
end

-- The window's echoes: the stored ones still ahead, and the new ones, merged where they meet.
local echoes = {}
local given = pairsOf(ARGV[6])
if #given > 0 or (f[6] or '') ~= '' then
  local all = pairsOf(f[6])
  for _, e in ipairs(given) do all[#all + 1] = e end
  table.sort(all, function(a, b) return a[1] < b[1] end)
  for _, e in ipairs(all) do
    if e[2] > now then
      local last = echoes[#echoes]
      if last and e[1] <= last[2] then
        if e[2] > last[2] then last[2] = e[2] end
      else
        echoes[#echoes + 1] = {e[1], e[2]}
      end
    end
  end
  -- Too many: the closest two become one (the turns between them move too).
  while #echoes > 16 do
    local best, gap = 1, math.huge
    for i = 1, #echoes - 1 do
      local g = echoes[i + 1][1] - echoes[i][2]
      if g < gap then best, gap = i, g end
    end
    echoes[best][2] = echoes[best + 1][2]
    table.remove(echoes, best + 1)
  end
end
-- Turns, spaced by the interval from the next free one; one that falls inside an echo goes
-- at its end, and those after it are spaced from there.
local n = 0
local moves = {}
if want > 0 then
  n = math.min(want, math.floor(horizon / interval) + 1)
  local at, e, moved = first, 1, 0
  for i = 0, n - 1 do
    while echoes[e] and echoes[e][2] <= at do e = e + 1 end
    if echoes[e] and at >= echoes[e][1] then
      moved = moved + echoes[e][2] - at
      at = echoes[e][2]
      if i == 0 then first = at else
        moves[#moves + 1] = tostring(i)
        moves[#moves + 1] = tostring(at)
      end
    end
    at = at + interval
  end
  booked = booked + n
  tat = at
  if moved > 0 then redis.call('HINCRBYFLOAT', key, 'moved', moved) end
  writes[#writes + 1] = 'tat'
  writes[#writes + 1] = tostring(at)
  writes[#writes + 1] = 'booked'
  writes[#writes + 1] = tostring(booked)
end
-- Kept: the echoes a turn booked from now on may still fall in.
local text = {}
for _, e in ipairs(echoes) do
  if e[2] > tat then text[#text + 1] = e[1] .. ':' .. e[2] end
end
text = table.concat(text, ',')
if text ~= (f[6] or '') then
  writes[#writes + 1] = 'echo'
  writes[#writes + 1] = text
end
if #writes > 0 then redis.call('HSET', key, unpack(writes)) end

if ok > 0 then
  -- Each slot's fields: its second's (ring of 128) and, while the ring of 256 slots of
  -- 10 ms still spans it, its own (a report later than that: the second only).
  local names, slots, seen = {}, {}, {}
  for _, p in ipairs(oks) do
    local slot = p[1]
    local sec = math.floor(slot * 10 / 1000)
    local mine = {{sec % 128, sec}}
    if slot * 10 > now - 256 * 10 then mine[2] = {'d' .. (slot % 256), slot} end
    for _, m in ipairs(mine) do
      if not seen[m[1]] then
        seen[m[1]] = true
        names[#names + 1] = m[1]
      end
      slots[#slots + 1] = {m[1], m[2], p[2]}
    end
  end
  local cur = redis.call('HMGET', logKey, unpack(names))
  local value = {}
  for i, name in ipairs(names) do value[name] = cur[i] end
  for _, s in ipairs(slots) do
    local name, at, count = s[1], s[2], s[3]
    local v = value[name]
    local was, k = false, 0
    if v then was, k = string.match(v, '^(%d+):(%d+)$') end
    -- A field holding a later slot of the ring is left alone: this report came too late for it.
    if was and tonumber(was) == at then
      value[name] = at .. ':' .. (tonumber(k) + count)
    elseif not was or tonumber(was) < at then
      value[name] = at .. ':' .. count
    end
  end
  local flat = {}
  for _, name in ipairs(names) do
    if value[name] then
      flat[#flat + 1] = name
      flat[#flat + 1] = value[name]
    end
  end
  if #flat > 0 then redis.call('HSET', logKey, unpack(flat)) end
end

local out = {tostring(now), tostring(first), tostring(interval), n, f[4] or '0', tostring(total), tostring(booked)}
for i = 7, #f do out[#out + 1] = f[i] or '' end
for _, m in ipairs(moves) do out[#out + 1] = m end
return out
