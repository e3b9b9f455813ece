--[[
  Notes platform ids a run's export maps to (for the orphan report). Each id
  goes to the seen bucket of its number modulo the buckets, the record
  bucket's number: a few hundred ids each, which Redis keeps as a small
  sorted array of integers (an intset), not a hashtable of strings. The
  script names the buckets itself: they share the prefix's hash tag, so on a
  cluster they are in the slot of KEYS[1].

  Input:
    KEYS[1]   the seen bucket of the first id
    ARGV[1]   the buckets' TTL, ms
    ARGV[2]   a seen bucket's name without its number
    ARGV[3]   the number of buckets
    ARGV[4]   one character per id, '1' where its bucket is to get the TTL
    ARGV[5..] the platform ids

  Output:
    0
]]
--- @include "bucket-pattern"
local ttl, buckets, expire = ARGV[1], tonumber(ARGV[3]), ARGV[4]
local name = bucketPattern(ARGV[2])
local format, byte = string.format, string.byte
for i = 5, #ARGV do
  local bucket = format(name, tonumber(ARGV[i]) % buckets)
  redis.call('SADD', bucket, ARGV[i])
  if byte(expire, i - 4) == 49 then redis.call('PEXPIRE', bucket, ttl) end
end
return 0
