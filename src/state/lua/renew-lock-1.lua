--[[
  Extends a lock while its holder's token still holds it (compare-and-set,
  as BullMQ's own extendLock): a holder whose lock expired never extends its
  successor's.

  Input:
    KEYS[1]  the lock (the migration lock, or BullMQ's `<queue>:<id>:lock`)
    ARGV[1]  the holder's token
    ARGV[2]  the lock's new time to live, ms

  Output:
    1 renewed, 0 held by another token or by none
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
