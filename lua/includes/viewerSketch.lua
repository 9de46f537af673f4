-- An entity's sketch of distinct viewers, in one key: up to `exact` viewers an exact sorted
-- list of viewer digests (includes/packedList); past that, a Redis HyperLogLog of the same
-- digests (at most 12 KiB, 0.81 % standard error). Digests are keyed hashes below 2^48
-- (src/services/viewerDigests.ts): nothing here names a viewer. Viewers are added in batches
-- (lua/foldViews-3.lua), so a hot post's list is rewritten once per batch, not per view.
--- @include "includes/packedList"
local HLL_MAGIC = 'HYLL'

local function isHll(raw) return raw ~= nil and raw ~= false and string.sub(raw, 1, 4) == HLL_MAGIC end

-- The decimal a HyperLogLog is fed for a digest (tostring would round a 48-bit number).
local function digestText(value) return string.format('%.0f', value) end

-- Feeds `digests` (numbers) into the HyperLogLog at `key`, a thousand per PFADD.
local function feedHll(key, digests)
  for i = 1, #digests, 1000 do
    local batch = {}
    for j = i, math.min(i + 999, #digests) do batch[#batch + 1] = digestText(digests[j]) end
    redis.call('PFADD', key, unpack(batch))
  end
end

local function listValues(list)
  local values = {}
  for i = 1, size(list) do values[i] = valueAt(list, i) end
  return values
end

-- How many distinct viewers the sketch at `key` counts (0 when there is none).
local function sketchCount(key)
  local raw = redis.call('GET', key)
  if isHll(raw) then return redis.call('PFCOUNT', key) end
  return raw and size(decodeList(raw)) or 0
end

-- `list` with the values of `sorted` (ascending, distinct) that it lacks: the new list and
-- how many were new. One pass: each value is placed by a binary search, and the list is
-- rebuilt once from its slices.
local function merged(list, sorted)
  list = widened(list, widthFor(sorted[#sorted]))
  local w = list.w
  local parts, from, added = { string.char(w) }, 1, 0
  for _, value in ipairs(sorted) do
    local at = lowerBound(list, value)
    if at > size(list) or valueAt(list, at) ~= value then
      parts[#parts + 1] = string.sub(list.s, before(list, from) + 1, before(list, at))
      parts[#parts + 1] = pack(value, w)
      from, added = at, added + 1
    end
  end
  parts[#parts + 1] = string.sub(list.s, before(list, from) + 1)
  return { w = w, s = table.concat(parts) }, added
end

-- Adds `digests` (numbers, in any order, repeats allowed) to the sketch at `key`: how much its
-- exact count moved. A HyperLogLog's count is not taken here (lua/takeViewSnapshots-2.lua
-- counts it): 0, but for the batch that turns the list into one.
local function sketchAddMany(key, digests, exact)
  if #digests == 0 then return 0 end
  local raw = redis.call('GET', key)
  if isHll(raw) then
    feedHll(key, digests)
    return 0
  end
  table.sort(digests)
  local sorted = {}
  for _, value in ipairs(digests) do
    if value ~= sorted[#sorted] then sorted[#sorted + 1] = value end
  end
  local list = decodeList(raw)
  local before = size(list)
  local grown, added = merged(list, sorted)
  if before + added <= exact then
    if added > 0 then redis.call('SET', key, grown.s) end
    return added
  end
  -- Past the exact list: the same digests go into a HyperLogLog instead.
  redis.call('DEL', key)
  feedHll(key, listValues(grown))
  return redis.call('PFCOUNT', key) - before
end

-- Merges the sketch `other` (as stored, from elsewhere) into the one at `key`; `spare` is a
-- key in the same slot it may use for a moment.
local function sketchMerge(key, other, exact, spare)
  if isHll(other) then
    redis.call('SET', spare, other)
    local raw = redis.call('GET', key)
    if raw and not isHll(raw) then
      redis.call('DEL', key)
      feedHll(key, listValues(decodeList(raw)))
    end
    redis.call('PFMERGE', key, key, spare)
    redis.call('DEL', spare)
    return
  end
  sketchAddMany(key, listValues(decodeList(other)), exact)
end
