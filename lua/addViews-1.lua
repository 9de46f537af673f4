--[[
  The entities' side of recording views, for entities whose view counts now (lua/claimViews-1.lua
  said so): all of a request's on a single Redis, one partition's on a Cluster. Each view adds
  1 to the entity's `total` view slot in its aggregation hash, which the next flush folds into
  its packed counters as it folds a like's deltas (no event per view). The viewer joins the
  entity's sketch of distinct viewers (includes/viewerSketch), and the `unique` slot moves by
  as much as the sketch's count did. The entity joins its partition's dirty set and the views
  to persist (src/counters/viewSnapshots.ts).

  Input:
    KEYS[1] dirty set of the first entity's partition   (declared so a Cluster routes the call)
    ARGV[1] key prefix   ARGV[2] the most viewers an exact sketch holds
    ARGV[3..] per entity, three arguments: its partition tag "{pN}", its name "<type>:<id>",
            and the viewer's digest (a decimal integer below 2^48), or '' for a view counted
            in `total` only

  Output: per entity, how much its `unique` count moved; -2 for invalid arguments
]]
--- @include "includes/keyNames"
--- @include "includes/viewSlots"
--- @include "includes/viewerSketch"
local rcall = redis.call

local prefix, exact = ARGV[1], tonumber(ARGV[2])
if not exact or exact < 1 or (#ARGV - 2) % 3 ~= 0 then return -2 end

-- Every argument checked before the first write (no rollback in Redis).
local digests = {}
for i = 3, #ARGV, 3 do
  local digest = ARGV[i + 2]
  if digest ~= '' then
    local value = tonumber(digest)
    if not value or value < 0 or value >= 2 ^ 48 or value % 1 ~= 0 then return -2 end
    digests[i] = value
  end
end

local moved = {}
local byTag, tags = {}, {}
for i = 3, #ARGV, 3 do
  local tag, entity = ARGV[i], ARGV[i + 1]
  local aggKey = prefix .. KEY.aggregation .. tag .. ':' .. KEY.schema .. entity
  rcall('HINCRBY', aggKey, VIEW_SLOT.total, 1)
  local delta = digests[i] and sketchAdd(prefix .. KEY.viewers .. tag .. ':' .. KEY.schema .. entity, digests[i], exact) or 0
  if delta ~= 0 then rcall('HINCRBY', aggKey, VIEW_SLOT.unique, delta) end
  moved[#moved + 1] = delta
  if not byTag[tag] then
    byTag[tag] = {}
    tags[#tags + 1] = tag
  end
  table.insert(byTag[tag], entity)
end
for _, tag in ipairs(tags) do
  rcall('SADD', prefix .. KEY.dirty .. tag, unpack(byTag[tag]))
  rcall('SADD', prefix .. KEY.viewsPending .. tag, unpack(byTag[tag]))
end
return moved
