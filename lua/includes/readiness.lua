-- Whether Redis holds an entity's facts: after Redis lost its data they must come back from
-- PostgreSQL before anything is decided against them. A partition is ready (`ready:{pN}`)
-- when all of its entities are; during a recovery, each entity restored so far is a member
-- of `restored:{pN}`. Only the deployment check and recovery write these keys: nothing a
-- running process recreates by itself can make an empty Redis look ready.
--- @include "includes/keyNames"
--- @include "includes/mget"
local readyPartitions = {} -- per call: one look per partition, however many entities

-- Looks up every partition of `tags` (a set of "{pN}") in one MGET, for a call over many.
local function readPartitions(prefix, tags)
  local names, order = {}, {}
  for tag in pairs(tags) do
    order[#order + 1] = tag
    names[#order] = prefix .. KEY.ready .. tag
  end
  local raw = mgetMany(names)
  for i, tag in ipairs(order) do readyPartitions[tag] = raw[i] ~= false end
end

local function entityReady(prefix, tag, entity)
  local ready = readyPartitions[tag]
  if ready == nil then
    ready = redis.call('EXISTS', prefix .. KEY.ready .. tag) == 1
    readyPartitions[tag] = ready
  end
  return ready or redis.call('SISMEMBER', prefix .. KEY.restored .. tag, entity) == 1
end
