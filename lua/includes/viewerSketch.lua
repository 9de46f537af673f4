-- An entity's sketch of distinct viewers, in one key: up to `exact` viewers an exact sorted
-- list of viewer digests (includes/packedList); past that, a Redis HyperLogLog of the same
-- digests (at most 12 KiB, 0.81 % standard error). Digests are keyed hashes below 2^48
-- (src/services/viewerDigests.ts): nothing here names a viewer.
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

-- Adds `digest` to the sketch at `key`: how much its count moved. A HyperLogLog's is not
-- counted here (a PFCOUNT after each change would cost more than the view): the snapshot
-- job recounts it (lua/takeViewSnapshots-2.lua), so 0.
local function sketchAdd(key, digest, exact)
  local raw = redis.call('GET', key)
  if isHll(raw) then
    redis.call('PFADD', key, digestText(digest))
    return 0
  end
  local list = decodeList(raw)
  local n = size(list)
  local at = lowerBound(list, digest)
  if at <= n and valueAt(list, at) == digest then return 0 end
  if n < exact then
    redis.call('SET', key, inserted(list, at, digest).s)
    return 1
  end
  -- One viewer past the exact list: the same digests go into a HyperLogLog instead.
  local digests = listValues(list)
  digests[#digests + 1] = digest
  redis.call('DEL', key)
  feedHll(key, digests)
  return redis.call('PFCOUNT', key) - n
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
  for _, digest in ipairs(listValues(decodeList(other))) do sketchAdd(key, digest, exact) end
end
