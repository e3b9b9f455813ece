--[[
  Claims of a run whose job keeps one survivor of its duplicates
  (survivor-claims.ts): decides a batch by the rules of `decideSurvivors`
  (src/sync/survivors.ts) and moves each key to its winner. A key nobody
  holds is claimed at once (HSETNX, the usual row), and given back if the
  row loses on another key. The script names the claim buckets itself: they
  share the prefix's hash tag, so on a cluster they are in the slot of
  KEYS[1]. A claim's value is `<line>|<sticky>|<rank>|<record>`, the rank
  empty (none), decimal text, or `~` and its base-64 digits (ARGV[6]); on
  the key that is its row's record, `<line>|<sticky + 2>|<rank>|`: the
  record left out, as the reader knows the key.

  Input:
    KEYS[1]  the run's claims marker
    ARGV[1]  the claims' TTL, ms
    ARGV[2]  one character per key, '1' where its bucket is to get the TTL
    ARGV[3]  a claim bucket's name without its number
    ARGV[4]  the batch's layout, as claim-identities-2.lua's: per row its
             line, its number of keys, and per key its bucket and claim field
    ARGV[5]  the rule: newest, oldest, first or last
    ARGV[6]  the 64 digits of a rank in base 64, 0 first
    ARGV[7…] per row which of its keys is its record (1-based, 0: none) and
             the rest of its claim value: `<own>|<sticky>|<rank>|<record>`

  Output:
    {lost, unset, fresh}: per row that lost, five values (its line, its
    record, the winner's line and record, and the position, 0-based over all
    keys of the batch, of the key they share; a record is 0 when it is that
    key); the buckets flagged for the
    TTL that no winner wrote (they did not get it); 1 when the marker was
    missing (a new planning pass: every bucket touched then is flagged, and
    the caller forgets which buckets it had given the TTL)
]]
--- @include "bucket-pattern"
local marker = redis.call('GET', KEYS[1])
local fresh = marker == false or marker == 'released'
if fresh then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
local ttl, expire, layout, keep = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
local format, byte, sub, match = string.format, string.byte, string.sub, string.match
local bucketName = bucketPattern(ARGV[3])
local digit = {}
for i = 1, 64 do digit[byte(ARGV[6], i)] = i - 1 end
-- A whole rank below 2^53 is exact in a Lua number: n * 64 + d never rounds.
local function rankOf(t)
  if byte(t, 1) ~= 126 then return tonumber(t) end
  local n = 0
  for i = 2, #t do n = n * 64 + digit[byte(t, i)] end
  return n
end
-- A claim's holder; `ref` 0 when the claim left its record out (the claim's key is it).
local function parse(v)
  local line, s, rank, ref = match(v, '^(%d+)|(%d)|([^|]*)|(.*)$')
  s = tonumber(s)
  if s >= 2 then s, ref = s - 2, 0 end
  return { line = tonumber(line), s = s, rank = rankOf(rank), ref = ref }
end
local function beats(c, h)
  if c.s ~= h.s then return c.s > h.s end
  if keep == 'last' then return c.line > h.line end
  if (keep == 'newest' or keep == 'oldest') and c.rank ~= h.rank then
    if c.rank == nil then return false end
    if h.rank == nil then return true end
    if keep == 'newest' then return c.rank > h.rank end
    return c.rank < h.rank
  end
  return c.line < h.line
end
local out, want = {}, {}
local at, k, row = 1, 0, 0
while at <= #layout do
  local l1, l2, l3, l4, l5, n = byte(layout, at, at + 5)
  local line = (((l1 * 128 + l2) * 128 + l3) * 128 + l4) * 128 + l5
  at = at + 6
  row = row + 1
  local own, tail = match(ARGV[6 + row], '^(%d+)|(.*)$')
  own = tonumber(own)
  local value = format('%d', line) .. '|' .. tail
  local ownValue = value
  if own > 0 then
    local s, rank = match(tail, '^(%d)|([^|]*)|')
    ownValue = format('%d|%d|', line, tonumber(s) + 2) .. rank .. '|'
  end
  local numbers, buckets, fields, taken, held, others = {}, {}, {}, {}, {}, {}
  for j = 1, n do
    local b1, b2 = byte(layout, at, at + 1)
    numbers[j] = b1 * 128 + b2
    buckets[j] = format(bucketName, numbers[j])
    fields[j] = sub(layout, at + 2, at + 11)
    at = at + 12
    if fresh or byte(expire, k + j) == 49 then want[numbers[j]] = true end
    if redis.call('HSETNX', buckets[j], fields[j], j == own and ownValue or value) == 1 then
      taken[j] = true
    else
      local h = parse(redis.call('HGET', buckets[j], fields[j]))
      if h.line ~= line then
        held[j] = true
        local known = false
        for _, o in ipairs(others) do if o.h.line == h.line then known = true break end end
        if not known then others[#others + 1] = { h = h, key = k + j - 1 } end
      end
    end
  end
  local over = nil
  if #others > 0 then
    local me = parse(value)
    for _, o in ipairs(others) do
      if not beats(me, o.h) then over = o break end
    end
  end
  if over then
    for j = 1, n do
      if taken[j] then redis.call('HDEL', buckets[j], fields[j]) end
    end
    out[#out + 1] = line; out[#out + 1] = match(tail, '^%d|[^|]*|(.*)$')
    out[#out + 1] = over.h.line; out[#out + 1] = over.h.ref; out[#out + 1] = over.key
  else
    for j = 1, n do
      if held[j] then redis.call('HSET', buckets[j], fields[j], j == own and ownValue or value) end
      if want[numbers[j]] then
        redis.call('PEXPIRE', buckets[j], ttl)
        want[numbers[j]] = nil
      end
    end
    for _, o in ipairs(others) do
      out[#out + 1] = o.h.line; out[#out + 1] = o.h.ref
      out[#out + 1] = line; out[#out + 1] = match(tail, '^%d|[^|]*|(.*)$'); out[#out + 1] = o.key
    end
  end
  k = k + n
end
local unset = {}
for b in pairs(want) do unset[#unset + 1] = b end
return {out, unset, fresh and 1 or 0}
