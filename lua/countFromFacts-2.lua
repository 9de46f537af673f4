--[[
  Read-only: an entity's like and favourite counts straight from its bitmap facts, for when
  its SDS is missing or malformed (a missing SDS is never read as zero).

  Input:
    KEYS[1] like chunk index   bmi:{pN}:like:<type>:<id>
    KEYS[2] fav chunk index    bmi:{pN}:fav:<type>:<id>
    ARGV[1] like chunk key prefix (bm:{pN}:like:<type>:<id>:)
    ARGV[2] fav chunk key prefix

  Output: { likes, favs, server time in epoch ms }
]]
--- @include "includes/countFromFacts"

local time = redis.call('TIME')
return {
  countChunks(KEYS[1], ARGV[1]),
  countChunks(KEYS[2], ARGV[2]),
  tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000),
}
