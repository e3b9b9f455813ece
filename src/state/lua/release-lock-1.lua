--[[
  Deletes a lock if its holder's token still holds it (compare-and-set): a
  holder whose lock expired never removes its successor's. Also frees a job
  definition's BullMQ deduplication key only while it names a stale run.

  Input:
    KEYS[1]  the lock (or the deduplication key)
    ARGV[1]  the holder's token (the stale run id)

  Output:
    1 released, 0 held by another token or by none
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])
