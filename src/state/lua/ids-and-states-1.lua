--[[
  What our state knows of a batch of records, each by its identity keys: the
  identity map, the pending creates and the record states. The script names
  the buckets itself: they share the prefix's hash tag, so on a cluster they
  are in the slot of KEYS[1].

  Input:
    KEYS[1]  the entity's pending hash
    ARGV[1]  an identity-map bucket's name without its number
    ARGV[2]  a record-state bucket's likewise
    ARGV[3]  the number of record buckets
    ARGV[4]  the layout, 7-bit characters: per record one, its number of
             keys, then per key its identity bucket and its length in bytes,
             each in three (high first)
    ARGV[5]  every record's keys end to end (one argument a batch, not one a
             key: a quarter of the client's CPU a key)

  Output:
    {ids, pending, states}: each key's platform id in our identity map, read
    up to the record's first mapped key (nil: none, or a key after it: the
    strongest mapped key names the record); each key's pending create (nil:
    none), or an empty list when no create is pending at all (the usual case:
    the pending hash is not searched); each record's state under the platform
    id of its first mapped key (nil: no key mapped, or no state there)
]]
--- @include "bucket-pattern"
local idsAt, recsAt, recBuckets, layout, text = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local format, byte, sub = string.format, string.byte, string.sub
local idsName = bucketPattern(idsAt)
local recsName = bucketPattern(recsAt)
local ids, pending, states = {}, {}, {}
local at, k, r, from = 1, 1, 0, 1
while at <= #layout do
  local n = byte(layout, at)
  at = at + 1
  r = r + 1
  local state = false
  local mapped = false
  for j = 1, n do
    local b1, b2, b3, l1, l2, l3 = byte(layout, at, at + 5)
    local to = from + l1 * 16384 + l2 * 128 + l3
    local id = false
    if not mapped then
      id = redis.call('HGET', format(idsName, b1 * 16384 + b2 * 128 + b3), sub(text, from, to - 1))
    end
    at, from = at + 6, to
    ids[k] = id
    if id then
      mapped = true
      -- A platform id that is not a number is reported by the caller, which reads it too.
      local num = tonumber(id)
      if num then state = redis.call('HGET', format(recsName, num % recBuckets), id) end
    end
    k = k + 1
  end
  states[r] = state
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local keys = {}
  at, from = 1, 1
  while at <= #layout do
    local n = byte(layout, at)
    at = at + 1
    for j = 1, n do
      local l1, l2, l3 = byte(layout, at + 3, at + 5)
      local to = from + l1 * 16384 + l2 * 128 + l3
      keys[#keys + 1] = sub(text, from, to - 1)
      at, from = at + 6, to
    end
  end
  for i = 1, #keys, 1000 do
    local part = redis.call('HMGET', KEYS[1], unpack(keys, i, math.min(i + 999, #keys)))
    for j = 1, #part do pending[#pending + 1] = part[j] end
  end
end
return {ids, pending, states}
