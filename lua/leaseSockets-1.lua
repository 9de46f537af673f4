--[[
  The WebSocket connections one client (a user, or an anonymous address) holds across every
  API process: a sorted set of socket ids scored by when their lease ends. A process renews
  its sockets' leases while they are open and removes them when they close; a process that
  died stops renewing, and its sockets leave within one lease.

  Input:
    KEYS[1] the client's sockets   sockets:<client>   (zset: socket id -> lease end, Redis ms)
    ARGV[1] lease (ms)
    ARGV[2] at most this many sockets, counting the new one; 0: renew, never refuse
    ARGV[3..] socket ids (one to take a place; any number to renew)

  Output: 1 held (or renewed), 0 refused (the client holds ARGV[2] already); -2 invalid arguments
]]
local rcall = redis.call
local lease, max = tonumber(ARGV[1]), tonumber(ARGV[2])
if not lease or lease < 1 or not max or max < 0 or #ARGV < 3 then return -2 end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
rcall('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if max > 0 and rcall('ZSCORE', KEYS[1], ARGV[3]) == false and rcall('ZCARD', KEYS[1]) >= max then return 0 end
for i = 3, #ARGV do rcall('ZADD', KEYS[1], now + lease, ARGV[i]) end
rcall('PEXPIRE', KEYS[1], lease)
return 1
