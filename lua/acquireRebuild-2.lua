--[[
  Takes the right to rebuild one entity: its lock (so two workers never rebuild it at once)
  and one slot of its rate limit (at most ARGV[4] rebuilds per window).

  Input:
    KEYS[1] rebuild lock    rblock:{pN}:<type>:<id>
    KEYS[2] rebuild count   rbrate:{pN}:<type>:<id>   (expires with the window)
    ARGV[1] lock holder     ARGV[2] lock ms
    ARGV[3] window ms       ARGV[4] rebuilds allowed per window

  Output:
    { 1 }          acquired
    { 0, ttl }     locked by another holder for ttl ms
    { -1, ttl }    rate limited: the window ends in ttl ms
]]
local rcall = redis.call
local lockMs, windowMs, allowed = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if not lockMs or not windowMs or not allowed then return -2 end

if rcall('EXISTS', KEYS[1]) == 1 then return { 0, rcall('PTTL', KEYS[1]) } end
local used = tonumber(rcall('GET', KEYS[2]) or '0')
if used >= allowed then return { -1, rcall('PTTL', KEYS[2]) } end

rcall('SET', KEYS[1], ARGV[1], 'PX', lockMs)
if rcall('INCR', KEYS[2]) == 1 then rcall('PEXPIRE', KEYS[2], windowMs) end
return { 1 }
