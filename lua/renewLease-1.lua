--[[
  Extends a lease only if the caller still holds it (a lease that expired and was taken by
  another member must not be stolen back).

  Input:
    KEYS[1] lease key
    ARGV[1] holder id   ARGV[2] lease length (ms)

  Output: 1 renewed, 0 not the holder
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
