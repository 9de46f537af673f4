--[[
  Read-only: whether one user has each of some relations on each of several entities of one
  type (the viewer's like and fav on a page of posts, whom the viewer follows). One call per
  page on a single Redis; on a Cluster one per partition, every entity of a call in its slot.
  Reactions are read from each entity's reaction index (includes/reactionIndex), one HMGET for
  all of them; only where that does not know are they looked up kind by kind.

  Input:
    KEYS[1] chunk index of the first relation asked   (declared so a Cluster routes the call)
    ARGV[1] key prefix   ARGV[2] user id   ARGV[3] entity type   ARGV[4] relations, "like,fav"
    ARGV[5] the relations of ARGV[4] that are reactions, with their slots ("r_laugh:7", or '')
    ARGV[6..] entities, each as two arguments: partition tag "{pN}", entity id

  Output: one string, a character per answer ('1' or '0'), entity by entity: whether Redis
  holds its facts ('0' when they are lost and not yet restored: see includes/readiness), then
  each relation in the order given. One string, not an array of numbers: the API reads a
  page's hundreds of answers without an array element each.
]]
--- @include "includes/relationSet"
--- @include "includes/readiness"
--- @include "includes/reactionIndex"

local prefix, user = ARGV[1], tonumber(ARGV[2])
local names = {}
for name in string.gmatch(ARGV[4], '[^,]+') do names[#names + 1] = name end
local slotOf = {}
for _, reaction in ipairs(parseRelations(ARGV[5])) do slotOf[reaction[1]] = string.char(reaction[2]) end
local hasReactions = next(slotOf) ~= nil

local tags, entities = {}, {}
for i = 6, #ARGV, 2 do
  tags[ARGV[i]] = true
  entities[#entities + 1] = { ARGV[i], ARGV[3] .. ':' .. ARGV[i + 1] }
end
readPartitions(prefix, tags)
local held = hasReactions and indexedReactions(prefix, entities, user) or {}

-- Every relation the index does not answer, for one set lookup.
local bases, at = {}, {}
for e, entity in ipairs(entities) do
  for m, name in ipairs(names) do
    if not (slotOf[name] and held[e]) then
      bases[#bases + 1] = entity[1] .. ':' .. name .. ':' .. entity[2]
      at[(e - 1) * #names + m] = #bases
    end
  end
end
local members = hasMembers(prefix, bases, user)

local reply = {}
for e, entity in ipairs(entities) do
  reply[#reply + 1] = entityReady(prefix, entity[1], entity[2]) and '1' or '0'
  for m, name in ipairs(names) do
    local looked = at[(e - 1) * #names + m]
    local has
    if looked then has = members[looked] else has = string.find(held[e], slotOf[name], 1, true) ~= nil end
    reply[#reply + 1] = has and '1' or '0'
  end
end
return table.concat(reply)
