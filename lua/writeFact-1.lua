--[[
  Sets one relation fact without an event: for recovery, which restores the facts PostgreSQL
  holds and then counts them (the events that moved the counters are long applied).

  Input:
    KEYS[1] chunk index of the relation   (declared so a Cluster routes the call)
    ARGV[1] key prefix   ARGV[2] partition tag "{pN}"   ARGV[3] relation   ARGV[4] entity "<type>:<id>"
    ARGV[5] user id      ARGV[6] state (0 or 1)
    ARGV[7] every reaction, with its slot (includes/reactionIndex)

  Output: 1 when the fact changed, else 0
]]
--- @include "includes/relationSet"
--- @include "includes/reactionIndex"

local relation, entity, user, member = ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6] == '1'
if not setMember(relationKeys(ARGV[1], ARGV[2], relation .. ':' .. entity), user, member) then return 0 end
indexIfReaction(ARGV[1], ARGV[2], entity, parseRelations(ARGV[7]), relation, user, member)
return 1
