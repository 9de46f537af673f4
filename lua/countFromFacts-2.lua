--[[
  Read-only: an entity's like and favourite counts straight from its facts, for when its packed counters
  are missing or malformed (missing counters are never read as zero).

  Input:
    KEYS[1] like chunk index   bmi:{pN}:like:<type>:<id>   (declared so a Cluster routes the
    KEYS[2] fav chunk index    bmi:{pN}:fav:<type>:<id>     call; the script names the rest)
    ARGV[1] key prefix   ARGV[2] partition tag "{pN}"   ARGV[3] entity ("<type>:<id>")

  Output: { likes, favs, server time in epoch ms }
]]
--- @include "includes/relationSet"

local time = redis.call('TIME')
return {
  countMembers(relationKeys(ARGV[1], ARGV[2], 'like:' .. ARGV[3])),
  countMembers(relationKeys(ARGV[1], ARGV[2], 'fav:' .. ARGV[3])),
  tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000),
}
