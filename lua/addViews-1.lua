--[[
  The entities' side of recording views, for the entities of one partition whose view counts
  now (lua/claimViews-1.lua said so). Each view adds 1 to the entity's `total` view slot in its
  aggregation hash, which the next flush folds into its packed counters as it folds a like's
  deltas (no event per view). The viewer joins the entity's sketch of distinct viewers, and
  the `unique` slot moves by as much as the sketch's estimate did.

  The sketch: up to EXACT viewers, an exact sorted list of viewer digests (includes/packedList);
  past that, a Redis HyperLogLog of the same digests (at most 12 KiB, 0.81 % standard error).
  Digests are keyed hashes (src/services/viewerDigests.ts): nothing here names a viewer.

  Input:
    KEYS[1] dirty set                 dirty:{pN}
    ARGV[1] aggregation hash prefix   agg:{pN}:v1:
    ARGV[2] sketch prefix             vu:{pN}:v1:
    ARGV[3] EXACT: the most viewers an exact list holds
    ARGV[4..] per entity, two arguments: its name "<type>:<id>", and the viewer's digest (a
            decimal integer below 2^48), or '' for a view counted in `total` only

  Output: per entity, how much its `unique` estimate moved; -2 for invalid arguments
]]
--- @include "includes/viewSlots"
--- @include "includes/packedList"
local rcall = redis.call
local HLL_MAGIC = 'HYLL'

local exact = tonumber(ARGV[3])
if not exact or exact < 1 or #ARGV % 2 ~= 1 then return -2 end

local digestText = function(value) return string.format('%.0f', value) end

-- The sketch at `key` with `digest` added: how much its estimate of distinct viewers moved.
local function addViewer(key, digest)
  local raw = rcall('GET', key)
  if raw and string.sub(raw, 1, 4) == HLL_MAGIC then
    local before = rcall('PFCOUNT', key)
    if rcall('PFADD', key, digestText(digest)) == 0 then return 0 end
    return rcall('PFCOUNT', key) - before
  end
  local list = decodeList(raw)
  local n = size(list)
  local at = lowerBound(list, digest)
  if at <= n and valueAt(list, at) == digest then return 0 end
  if n < exact then
    rcall('SET', key, inserted(list, at, digest).s)
    return 1
  end
  -- One viewer past the exact list: the same digests go into a HyperLogLog instead.
  rcall('DEL', key)
  local batch = { digestText(digest) }
  for i = 1, n do
    batch[#batch + 1] = digestText(valueAt(list, i))
    if #batch == 1000 or i == n then
      rcall('PFADD', key, unpack(batch))
      batch = {}
    end
  end
  return rcall('PFCOUNT', key) - n
end

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
  local delta = digests[i] and addViewer(ARGV[2] .. entity, digests[i]) or 0
  if delta ~= 0 then rcall('HINCRBY', aggKey, VIEW_SLOT.unique, delta) end
  rcall('SADD', KEYS[1], entity)
  moved[#moved + 1] = delta
end
return moved
