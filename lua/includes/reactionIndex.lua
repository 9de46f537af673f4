-- An entity's reaction index: which reactions each user holds on it, so the viewer's reactions
-- on a page are one HMGET per entity instead of a set lookup per reaction kind.
--   * `rx:{pN}:<type>:<id>`, a HASH: user id -> the counter slots of the reactions they hold,
--     one byte each. Kept by every script that changes a reaction's set (setRelation,
--     writeFact), in the same step. Past INDEX_MAX_USERS users it holds only the field
--     OVERFLOW, and its readers look each kind up in its set: a hot post's index would cost
--     far more than its sets (a HASH field against a bit), and a page holds few hot posts.
--   * `rxi:{pN}` marks a partition whose every entity is indexed, so that no hash means no
--     reactions. A partition without it may hold reactions written before the index (an
--     upgraded deployment, until src/recovery/reactionIndex.ts builds it): there an entity
--     without a hash is looked up kind by kind, and a writer first builds its hash from its sets.
-- Reactions are named by a spec of the entity type's reactions, "r_laugh:7,r_eyes:12"
-- (includes/relationSpec); a kind's byte is its counter slot.
--- @include "includes/keyNames"
--- @include "includes/relationSet"
--- @include "includes/relationSpec"
-- Listpack-encoded HASHes stay compact up to Redis's default 128 fields.
local INDEX_MAX_USERS = 128
local OVERFLOW = '+'

local function indexKey(prefix, tag, entity) return prefix .. KEY.reactionIndex .. tag .. ':' .. entity end

local function partitionIndexed(prefix, tag)
  return redis.call('EXISTS', prefix .. KEY.reactionsIndexed .. tag) == 1
end

-- Writes the entity's hash from its reactions' sets: for entities whose reactions predate the
-- index. `reactions` is the parsed spec; the sets' members are counted first, so a hot
-- post is never walked id by id.
local function buildIndex(prefix, tag, entity, reactions)
  local key = indexKey(prefix, tag, entity)
  local sets, total = {}, 0
  for i, reaction in ipairs(reactions) do
    sets[i] = relationKeys(prefix, tag, reaction[1] .. ':' .. entity)
    total = total + countMembers(sets[i])
  end
  if total > INDEX_MAX_USERS then
    redis.call('HSET', key, OVERFLOW, '1')
    return
  end
  local held = {}
  for i, reaction in ipairs(reactions) do
    for _, id in ipairs(allMembers(sets[i])) do held[id] = (held[id] or '') .. string.char(reaction[2]) end
  end
  local fields = {}
  for id, slots in pairs(held) do
    fields[#fields + 1] = string.format('%d', id)
    fields[#fields + 1] = slots
  end
  if #fields > 0 then redis.call('HSET', key, unpack(fields)) end
end

-- Records that `user` now holds (or no longer holds) the reaction of counter slot `slot`.
-- `reactions` is the type's spec (parsed), for an entity whose hash is not built yet.
local function indexReaction(prefix, tag, entity, reactions, user, slot, held)
  local key, field = indexKey(prefix, tag, entity), string.format('%d', user)
  local found = redis.call('HMGET', key, field, OVERFLOW)
  if not found[1] and not found[2] and redis.call('EXISTS', key) == 0 and not partitionIndexed(prefix, tag) then
    buildIndex(prefix, tag, entity, reactions)
    found = redis.call('HMGET', key, field, OVERFLOW)
  end
  if found[2] then return end
  local byte, slots = string.char(slot), found[1] or ''
  local at = string.find(slots, byte, 1, true)
  if at then slots = string.sub(slots, 1, at - 1) .. string.sub(slots, at + 1) end
  if held then slots = slots .. byte end
  if slots == '' then
    redis.call('HDEL', key, field)
  elseif redis.call('HSET', key, field, slots) == 1 and redis.call('HLEN', key) > INDEX_MAX_USERS then
    redis.call('DEL', key)
    redis.call('HSET', key, OVERFLOW, '1')
  end
end

-- Keeps the index when `relation`, just changed, is one of `reactions`.
local function indexIfReaction(prefix, tag, entity, reactions, relation, user, held)
  for _, reaction in ipairs(reactions) do
    if reaction[1] == relation then
      indexReaction(prefix, tag, entity, reactions, user, reaction[2], held)
      return
    end
  end
end

-- The reaction slots `user` holds on each entity of `entities` ({tag, "<type>:<id>"}), as a
-- string of slot bytes, or false where the index does not know (overflowed, or not built):
-- the caller looks those up kind by kind.
local function indexedReactions(prefix, entities, user)
  local field = string.format('%d', user)
  local tags, marks = {}, {}
  for _, e in ipairs(entities) do
    if not tags[e[1]] then
      tags[e[1]] = #marks + 1
      marks[#marks + 1] = prefix .. KEY.reactionsIndexed .. e[1]
    end
  end
  local indexed = redis.call('MGET', unpack(marks))
  local answers = {}
  for i, e in ipairs(entities) do
    local key = indexKey(prefix, e[1], e[2])
    local found = redis.call('HMGET', key, field, OVERFLOW)
    if found[2] then
      answers[i] = false
    elseif found[1] then
      answers[i] = found[1]
    else
      answers[i] = (indexed[tags[e[1]]] or redis.call('EXISTS', key) == 1) and '' or false
    end
  end
  return answers
end
