--[[
  Adds up the views buffered by lua/recordViews-3.lua or lua/addViews-1.lua, a bounded number
  per call: the flush calls it before each fold of the partition (src/counters/flush.ts), and
  so does the views job before it persists them. Per entity, once for all its views in the
  call: its `total` slot moves by their number (in its aggregation hash, folded next as a
  like's deltas are), its viewers join its sketch of distinct viewers (includes/viewerSketch:
  one write of a list, or one PFADD) and its `unique` slot moves by as much as the sketch's
  exact count did (a HyperLogLog's is counted by lua/takeViewSnapshots-2.lua). The entity
  joins the dirty set and the views to persist.

  Input:
    KEYS[1] buffered views     vbuf:{pN}   (list of "<type>:<id> <digest>", digest '-' for none)
    KEYS[2] dirty set          dirty:{pN}
    KEYS[3] views to persist   vpend:{pN}
    ARGV[1] aggregation hash prefix   agg:{pN}:v1:   ARGV[2] sketch prefix   vu:{pN}:v1:
    ARGV[3] the most viewers an exact sketch holds   ARGV[4] most views to take (at most 4,000)

  Output: { how many views it took (fewer than ARGV[4]: the buffer is empty), Redis's clock
  (epoch ms) when it took them }; -2 for invalid arguments
]]
--- @include "includes/viewSlots"
--- @include "includes/viewerSketch"
local rcall = redis.call

local exact, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
if not exact or exact < 1 or not limit or limit < 1 or limit > 4000 then return -2 end
local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local views = rcall('LRANGE', KEYS[1], 0, limit - 1)
if #views == 0 then return { 0, now } end
rcall('LTRIM', KEYS[1], #views, -1)

local byEntity, entities = {}, {}
for _, view in ipairs(views) do
  local entity, digest = string.match(view, '^(%S+) (%S+)$')
  if entity then
    local seen = byEntity[entity]
    if not seen then
      seen = { views = 0, digests = {} }
      byEntity[entity] = seen
      entities[#entities + 1] = entity
    end
    seen.views = seen.views + 1
    if digest ~= '-' then seen.digests[#seen.digests + 1] = digest end
  end
end
for _, entity in ipairs(entities) do
  local seen, aggKey = byEntity[entity], ARGV[1] .. entity
  rcall('HINCRBY', aggKey, VIEW_SLOT.total, seen.views)
  local delta = sketchAddMany(ARGV[2] .. entity, seen.digests, exact)
  if delta ~= 0 then rcall('HINCRBY', aggKey, VIEW_SLOT.unique, delta) end
end
if #entities > 0 then
  rcall('SADD', KEYS[2], unpack(entities))
  rcall('SADD', KEYS[3], unpack(entities))
end
return { #views, now }
