-- An entity's sketch of distinct viewers, in one key: up to `exact` viewers an exact list of
-- viewer digests (includes/packedList's layout, 6 bytes a digest, but in the order they came:
-- a new viewer is found by a byte search in C and appended, not sorted in); past that, a
-- Redis HyperLogLog of the same digests (at most 12 KiB, 0.81 % standard error). Digests are
-- keyed hashes below 2^48 (src/services/viewerDigests.ts): nothing here names a viewer.
-- Viewers are added in batches (lua/foldViews-3.lua): per batch, one write of a list, one
-- PFADD to a HyperLogLog. A sorted list (as written before) is read the same.
--- @include "includes/packedList"
local HLL_MAGIC = 'HYLL'
local WIDTH = 6

local function isHll(raw) return raw ~= nil and raw ~= false and string.sub(raw, 1, 4) == HLL_MAGIC end

-- The decimal a HyperLogLog is fed for a digest (tostring would round a 48-bit number).
local function digestText(value) return string.format('%.0f', value) end

-- Feeds `texts` (digests as decimal texts, as the buffers hold them) into the HyperLogLog at
-- `key`, a thousand per PFADD.
local function feedHll(key, texts)
  for i = 1, #texts, 1000 do redis.call('PFADD', key, unpack(texts, i, math.min(i + 999, #texts))) end
end

-- The list's digests as decimal texts, as a HyperLogLog is fed them.
local function listTexts(list)
  local texts = {}
  for i = 1, size(list) do texts[i] = digestText(valueAt(list, i)) end
  return texts
end

-- How many distinct viewers the sketch at `key` counts (0 when there is none).
local function sketchCount(key)
  local raw = redis.call('GET', key)
  if isHll(raw) then return redis.call('PFCOUNT', key) end
  return raw and size(decodeList(raw)) or 0
end

-- Whether the list `s` (6-byte digests after the width byte) holds the digest `packed`: a
-- plain find, which only counts where a digest starts (a match across two is skipped).
local function holds(s, packed)
  local from = 2
  while true do
    local at = string.find(s, packed, from, true)
    if not at then return false end
    if (at - 2) % WIDTH == 0 then return true end
    from = at + 1
  end
end

-- Adds `texts` (digests as decimal texts, in any order, repeats allowed) to the sketch at
-- `key`: how much its exact count moved. A HyperLogLog's count is not taken here
-- (lua/takeViewSnapshots-2.lua counts it): 0, but for the batch that turns the list into one.
local function sketchAddMany(key, texts, exact)
  if #texts == 0 then return 0 end
  local raw = redis.call('GET', key)
  if isHll(raw) then
    feedHll(key, texts)
    return 0
  end
  local list = widened(decodeList(raw), WIDTH)
  local seen, added = {}, {}
  for _, text in ipairs(texts) do
    if not seen[text] then
      seen[text] = true
      local packed = pack(tonumber(text), WIDTH)
      if not holds(list.s, packed) then added[#added + 1] = packed end
    end
  end
  local before = size(list)
  if before + #added <= exact then
    -- Written whole, not appended: Redis would give an appended string spare room, up to its size again.
    if #added > 0 then redis.call('SET', key, list.s .. table.concat(added)) end
    return #added
  end
  -- Past the exact list: the same digests go into a HyperLogLog instead.
  redis.call('DEL', key)
  feedHll(key, listTexts(list))
  feedHll(key, texts)
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
      feedHll(key, listTexts(decodeList(raw)))
    end
    redis.call('PFMERGE', key, key, spare)
    redis.call('DEL', spare)
    return
  end
  sketchAddMany(key, listTexts(decodeList(other)), exact)
end
