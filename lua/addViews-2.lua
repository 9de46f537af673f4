--[[
  The entities' side of recording views, for the entities of one partition whose view counts
  now (lua/claimViews-1.lua said so). Each view adds 1 to the entity's `total` view slot in its
  aggregation hash, which the next flush folds into its packed counters as it folds a like's
  deltas (no event per view). The viewer joins the entity's sketch of distinct viewers
  (includes/viewerSketch), and the `unique` slot moves by as much as the sketch's count did.
  The entity joins the views to persist (src/counters/viewSnapshots.ts).

  Input:
    KEYS[1] dirty set                 dirty:{pN}
    KEYS[2] views to persist          vpend:{pN}
    ARGV[1] aggregation hash prefix   agg:{pN}:v1:
    ARGV[2] sketch prefix             vu:{pN}:v1:
    ARGV[3] the most viewers an exact sketch holds
    ARGV[4..] per entity, two arguments: its name "<type>:<id>", and the viewer's digest (a
            decimal integer below 2^48), or '' for a view counted in `total` only

  Output: per entity, how much its `unique` count moved; -2 for invalid arguments
]]
--- @include "includes/viewSlots"
--- @include "includes/viewerSketch"
local rcall = redis.call

local exact = tonumber(ARGV[3])
if not exact or exact < 1 or #ARGV % 2 ~= 1 then return -2 end

-- Every argument checked before the first write (no rollback in Redis).
local digests = {}
for i = 4, #ARGV, 2 do
  local digest = ARGV[i + 1]
  if digest ~= '' then
    local value = tonumber(digest)
    if not value or value < 0 or value >= 2 ^ 48 or value % 1 ~= 0 then return -2 end
    digests[i] = value
  end
end

local moved = {}
for i = 4, #ARGV, 2 do
  local entity = ARGV[i]
  local aggKey = ARGV[1] .. entity
  rcall('HINCRBY', aggKey, VIEW_SLOT.total, 1)
  local delta = digests[i] and sketchAdd(ARGV[2] .. entity, digests[i], exact) or 0
  if delta ~= 0 then rcall('HINCRBY', aggKey, VIEW_SLOT.unique, delta) end
  rcall('SADD', KEYS[1], entity)
  rcall('SADD', KEYS[2], entity)
  moved[#moved + 1] = delta
end
return moved
