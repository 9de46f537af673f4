--[[
  Read-only: whether one user is in each of several relations of one partition (the viewer's
  like/fav on a page of posts, whom the viewer follows). One call per partition per page.

  Input:
    KEYS[1] chunk index of the first relation asked   (declared so a Cluster routes the
            call; every relation asked shares its partition's slot)
    ARGV[1] key prefix   ARGV[2] partition tag "{pN}"   ARGV[3] user id
    ARGV[4..] relations, each "<metric>:<type>:<id>"

  Output: { 1 or 0 per relation, in order }
]]
--- @include "includes/relationSet"

local userId = tonumber(ARGV[3])
local reply = {}
for i = 4, #ARGV do
  reply[#reply + 1] = hasMember(relationKeys(ARGV[1], ARGV[2], ARGV[i]), userId) and 1 or 0
end
return reply
