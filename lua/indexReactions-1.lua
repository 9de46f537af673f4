--[[
  Builds one entity's reaction index from its reactions' sets, unless it has one: for
  reactions written before the index existed (src/recovery/reactionIndex.ts).

  Input:
    KEYS[1] the entity's reaction index   rx:{pN}:<type>:<id>
    ARGV[1] key prefix   ARGV[2] partition tag "{pN}"   ARGV[3] entity "<type>:<id>"
    ARGV[4] every reaction, with its slot ("r_laugh:7,r_eyes:12")

  Output: 1 when it built the index, else 0
]]
--- @include "includes/reactionIndex"

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
buildIndex(ARGV[1], ARGV[2], ARGV[3], parseRelations(ARGV[4]))
return 1
