--[[
  Records a consumer's position, only ever forward (a redelivered older batch must not move
  it back).

  Input:
    KEYS[1] position key
    ARGV[1] position ("<ms>-<seq>")

  Output: 1 moved, 0 already at or past it
]]
--- @include "includes/positions"

if not isPosition(ARGV[1]) then return -2 end
if comparePositions(ARGV[1], redis.call('GET', KEYS[1]) or false) <= 0 then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1
