--[[
  Read-only: whether one user has each of some relations on each of several entities of one
  type (the viewer's like and fav on a page of posts, whom the viewer follows). One call per
  page on a single Redis; on a Cluster one per partition, every entity of a call in its slot.

  Input:
    KEYS[1] chunk index of the first relation asked   (declared so a Cluster routes the call)
    ARGV[1] key prefix   ARGV[2] user id   ARGV[3] entity type   ARGV[4] relations, "like,fav"
    ARGV[5..] entities, each as two arguments: partition tag "{pN}", entity id

  Output: entity by entity, whether Redis holds its facts (1, or 0 when they are lost and not
  yet restored: see includes/readiness), then 1 or 0 per relation in the order given
]]
--- @include "includes/relationSet"
--- @include "includes/readiness"

local names = {}
for name in string.gmatch(ARGV[4], '[^,]+') do names[#names + 1] = name end
local tags = {}
for i = 5, #ARGV, 2 do tags[ARGV[i]] = true end
readPartitions(ARGV[1], tags)
local bases = {}
local ready = {}
for i = 5, #ARGV, 2 do
  local tag, entity = ARGV[i], ARGV[3] .. ':' .. ARGV[i + 1]
  ready[#ready + 1] = entityReady(ARGV[1], tag, entity) and 1 or 0
  for _, name in ipairs(names) do bases[#bases + 1] = tag .. ':' .. name .. ':' .. entity end
end
local members = hasMembers(ARGV[1], bases, tonumber(ARGV[2]))
local reply = {}
for e, isReady in ipairs(ready) do
  reply[#reply + 1] = isReady
  for m = 1, #names do reply[#reply + 1] = members[(e - 1) * #names + m] and 1 or 0 end
end
return reply
