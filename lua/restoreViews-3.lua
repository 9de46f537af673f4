--[[
  Adds an entity's views persisted in PostgreSQL back after Redis lost its data, before its
  counters are rebuilt (src/recovery/entityRestore.ts): the persisted total joins the views
  recorded since the loss, and the persisted sketch is merged into the one those started, so
  a viewer seen before and after the loss counts once; the `unique` slot moves to the merged
  sketch's count. Once per entity per loss: `vrest:{pN}` remembers it until the partition is
  ready again.

  Input:
    KEYS[1] dirty set          dirty:{pN}
    KEYS[2] restored views     vrest:{pN}
    KEYS[3] views to persist   vpend:{pN}
    ARGV[1] entity name "<type>:<id>"   ARGV[2] counters prefix   ARGV[3] aggregation hash prefix
    ARGV[4] sketch prefix   ARGV[5] the most viewers an exact sketch holds
    ARGV[6] persisted total   ARGV[7] persisted sketch ('' for none)

  Output: 1 when restored now, 0 when it was before; -2 for invalid arguments
]]
--- @include "includes/viewSlots"
--- @include "includes/packedCounters"
--- @include "includes/viewerSketch"
local rcall = redis.call

local entity, exact, total = ARGV[1], tonumber(ARGV[5]), tonumber(ARGV[6])
if not exact or exact < 1 or not total or total < 0 then return -2 end
if rcall('HSETNX', KEYS[2], entity, 1) == 0 then return 0 end

local aggKey, sketchKey = ARGV[3] .. entity, ARGV[4] .. entity
local counters = unpackCounters(rcall('GET', ARGV[2] .. entity)) or {}
local tracked = (counters[VIEW_SLOT.unique + 1] or 0) + (tonumber(rcall('HGET', aggKey, VIEW_SLOT.unique)) or 0)
if ARGV[7] ~= '' then sketchMerge(sketchKey, ARGV[7], exact, sketchKey .. ':merging') end
local merged = sketchCount(sketchKey)
if total > 0 then rcall('HINCRBY', aggKey, VIEW_SLOT.total, total) end
if merged ~= tracked then rcall('HINCRBY', aggKey, VIEW_SLOT.unique, merged - tracked) end
rcall('SADD', KEYS[1], entity)
rcall('SADD', KEYS[3], entity)
return 1
