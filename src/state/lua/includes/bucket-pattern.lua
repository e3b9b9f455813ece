--[[
  For the scripts that name buckets themselves from a bucket's name without
  its number (`idsPrefix`, `claimBucketPrefix`, ... in keys.ts):
  `bucketPattern(at)` is a `string.format` pattern of the names, a `%` in the
  prefix kept as itself. Formatting the number costs half the CPU of
  `at .. n` or `tostring(n)`, which both write it with %.14g in the Lua of
  Redis 7.0.
]]
local function bucketPattern(at) return (string.gsub(at, '%%', '%%%%')) .. '%d' end
