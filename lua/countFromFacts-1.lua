--[[
  Read-only: an entity's counters straight from its facts, for when its packed counters are
  missing or malformed (missing counters are never read as zero).

  Input:
    KEYS[1] a counted relation's chunk index  bmi:{pN}:<relation>:<type>:<id>  (declared so a
            Cluster routes the call; the script names the rest, all in the same slot)
    ARGV[1] key prefix   ARGV[2] partition tag "{pN}"   ARGV[3] entity ("<type>:<id>")
    ARGV[4] fact-backed relations and their slots, e.g. "like:1,fav:2"

  Output: { server time in epoch ms, the counters by slot... (at least five) }
]]
--- @include "includes/relationSet"
--- @include "includes/countFromFacts"

local time = redis.call('TIME')
local reply = { tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) }
for slot, count in ipairs(countersFromFacts({ prefix = ARGV[1], tag = ARGV[2] }, ARGV[3], parseRelations(ARGV[4]))) do
  reply[slot + 1] = count
end
return reply
