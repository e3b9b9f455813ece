--[[
  Claims each row's identity keys for the run: each key goes to the first
  line that claims it (HSETNX), and what the conflict decision needs is read
  back. The script names the claim buckets itself: they share the prefix's
  hash tag, so on a cluster they are in the slot of KEYS[1].

  Input:
    KEYS[1]  the run's conflicted hash (line -> conflict record)
    KEYS[2]  the run's claims marker
    ARGV[1]  the claims' TTL, ms
    ARGV[2]  one character per key, '1' where its bucket is to get the TTL
    ARGV[3]  a claim bucket's name without its number
    ARGV[4]  the batch's layout, 7-bit characters: per row its line in five
             (high first), its number of keys in one, then per key its
             bucket in two and its claim field in ten (claim-digest.ts)

  Output:
    {others, lines, records, fresh}: the position (0-based, over all keys)
    and holder of every key held by another line than the row's; the
    conflict record (nil for none) of every line involved, the rows' and
    their keys' holders', read only once the run has any; and 1 when the
    marker was missing (a new planning pass: every bucket touched then gets
    the TTL, and the caller forgets which buckets it had given one)
]]
--- @include "bucket-pattern"
local others, lines, records, seen = {}, {}, {}, {}
local anyConflict = redis.call('EXISTS', KEYS[1]) == 1
local marker = redis.call('GET', KEYS[2])
local fresh = marker == false or marker == 'released'
if fresh then redis.call('SET', KEYS[2], '1', 'PX', ARGV[1]) end
local function involve(line)
  if not anyConflict or seen[line] then return end
  seen[line] = true
  lines[#lines + 1] = line
  records[#records + 1] = redis.call('HGET', KEYS[1], line)
end
local expire, bucketAt, layout = ARGV[2], ARGV[3], ARGV[4]
local format = string.format
local bucketName = bucketPattern(bucketAt)
local at, k = 1, 1
while at <= #layout do
  local l1, l2, l3, l4, l5, n = string.byte(layout, at, at + 5)
  local line = format('%d', (((l1 * 128 + l2) * 128 + l3) * 128 + l4) * 128 + l5)
  at = at + 6
  involve(line)
  for j = 1, n do
    local b1, b2 = string.byte(layout, at, at + 1)
    local bucket = format(bucketName, b1 * 128 + b2)
    local field = string.sub(layout, at + 2, at + 11)
    at = at + 12
    local holder = line
    if redis.call('HSETNX', bucket, field, line) == 0 then
      holder = redis.call('HGET', bucket, field)
    end
    if holder ~= line then
      others[#others + 1] = k - 1
      others[#others + 1] = holder
    end
    involve(holder)
    if fresh or string.byte(expire, k) == 49 then redis.call('PEXPIRE', bucket, ARGV[1]) end
    k = k + 1
  end
end
return {others, lines, records, fresh and 1 or 0}
