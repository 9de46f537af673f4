--[[
  Read-only: whether one user is in each of several relations (the viewer's like/fav on a
  page of posts, whom the viewer follows). One call per page on a single Redis; on a Cluster
  one per partition, every relation of a call sharing its slot.

  Input:
    KEYS[1] chunk index of the first relation asked   (declared so a Cluster routes the call)
    ARGV[1] key prefix   ARGV[2] user id
    ARGV[3..] relations, each as two arguments: partition tag "{pN}", "<metric>:<type>:<id>"

  Output: { 1 or 0 per relation, in order }
]]
--- @include "includes/relationSet"

local relations = {}
for i = 3, #ARGV, 2 do relations[#relations + 1] = relationKeys(ARGV[1], ARGV[i], ARGV[i + 1]) end
local reply = {}
for i, member in ipairs(hasMembers(relations, tonumber(ARGV[2]))) do reply[i] = member and 1 or 0 end
return reply
