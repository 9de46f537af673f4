--[[
  Sets one relation fact without an event: for recovery, which restores the facts PostgreSQL
  holds and then counts them (the events that moved the counters are long applied).

  Input:
    KEYS[1] chunk index of the relation   (declared so a Cluster routes the call)
    ARGV[1] key prefix   ARGV[2] partition tag "{pN}"   ARGV[3] relation "<relation>:<type>:<id>"
    ARGV[4] user id      ARGV[5] state (0 or 1)
    ARGV[6] entity "<type>:<id>"   ARGV[7] every reaction, with its slot (includes/reactionIndex)

  Output: 1 when the fact changed, else 0
]]
--- @include "includes/relationSet"
--- @include "includes/reactionIndex"

local user, member = tonumber(ARGV[4]), ARGV[5] == '1'
if not setMember(relationKeys(ARGV[1], ARGV[2], ARGV[3]), user, member) then return 0 end
local relation = string.sub(ARGV[3], 1, #ARGV[3] - #ARGV[6] - 1)
indexIfReaction(ARGV[1], ARGV[2], ARGV[6], parseRelations(ARGV[7]), relation, user, member)
return 1
