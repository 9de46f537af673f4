--[[
  Gives a lease back, only if the caller still holds it.

  Input:
    KEYS[1] lease key
    ARGV[1] holder id

  Output: 1 released, 0 not the holder
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
