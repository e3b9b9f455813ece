--[[
  The writer lease (src/queue/writer-lease.ts): takes it when no process
  holds it, or extends it for its holder; the holder also asks for help or
  withdraws its call. One call a second from every worker process.

  Input:
    KEYS[1]  the lease: the writing process's token
    KEYS[2]  the call for help: set while the writer cannot keep its pace
    ARGV[1]  this process's token
    ARGV[2]  the lease's time to live, ms
    ARGV[3]  from the holder: `1` asks for help, `0` withdraws the call,
             `-` leaves it as it is
    ARGV[4]  the call's time to live, ms

  Output:
    {1 when this process holds the lease (now), 1 when help is called for}
]]
local holder = redis.call('GET', KEYS[1])
local holds = 0
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  holds = 1
elseif not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  holds = 1
end
if holds == 1 then
  if ARGV[3] == '1' then
    redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[4])
  elseif ARGV[3] == '0' then
    redis.call('DEL', KEYS[2])
  end
end
return {holds, redis.call('EXISTS', KEYS[2])}
