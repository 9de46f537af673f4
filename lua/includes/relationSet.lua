-- One relation's members (user ids) for one (relation, entity), stored adaptively like a roaring
-- bitmap. Ids fall in chunks of 32,768; each chunk lives in exactly one of two places:
--   * an array block `ra:<name>:<start chunk>`: sorted ids, shared by every non-bitmap chunk
--     from its start up to the next block's start. The block index `rai:<name>` lists the
--     starts; without it there is one block, start 0. Sparse ids cost 4 bytes each plus one
--     key per relation, where a bitmap chunk would cost up to 4 KiB.
--   * a bitmap chunk `bm:<name>:<chunk>` (32,768 bits), listed in the SET `bmi:<name>` (the
--     layout of schema v1, where every chunk was a bitmap: such data reads as it is). A chunk
--     is promoted from its block once its bitmap (up to its highest bit) plus a key is smaller.
-- Blocks and the block index are packed id lists (below): a reader fetches every relation's
-- block 0, block index and its id's bitmap chunk with one MGET.
-- Readers and writers go through these functions only, inside one script: always atomic.
-- Bitmaps never demote: a chunk that drops back to a few ids keeps at most one plain bitmap.
local CHUNK_IDS = 32768
-- A block splits at a chunk boundary beyond this many ids, so a write rewrites a few KiB at most.
local BLOCK_MAX_IDS = 1024
-- What one more key costs Redis, roughly (dict entry, key name, object header).
local KEY_BYTES = 48

--- @include "includes/keyNames"
--- @include "includes/mget"
-- Key names of one relation. `base` is "<relation>:<type>:<id>"; `tag` the partition's "{pN}".
local function relationKeys(prefix, tag, base)
  local name = tag .. ':' .. base
  return {
    bitmap = prefix .. KEY.bitmap .. name .. ':',
    chunkIndex = prefix .. KEY.chunkIndex .. name,
    block = prefix .. KEY.arrayBlock .. name .. ':',
    blockIndex = prefix .. KEY.arrayIndex .. name,
  }
end

--- @include "includes/packedList"

-- Start chunk of the array block that holds `chunk` (when it is not a bitmap).
local function startIn(starts, chunk)
  local i = lowerBound(starts, chunk + 1) - 1
  return i > 0 and valueAt(starts, i) or 0
end

-- Moves the ids of `chunk` at positions [lo, hi) of `block` into the chunk's own bitmap,
-- written whole in one SET (an exactly sized string); returns the block without them.
local function promote(keys, block, chunk, lo, hi)
  local first = chunk * CHUNK_IDS
  local bytes = {}
  for i = lo, hi - 1 do
    local bit = valueAt(block, i) - first
    local byte = math.floor(bit / 8) + 1
    for b = #bytes + 1, byte do bytes[b] = 0 end
    bytes[byte] = bytes[byte] + 2 ^ (7 - bit % 8)
  end
  local chars = {}
  for b = 1, #bytes, 4096 do chars[#chars + 1] = string.char(unpack(bytes, b, math.min(b + 4095, #bytes))) end
  redis.call('SET', keys.bitmap .. chunk, table.concat(chars))
  redis.call('SADD', keys.chunkIndex, chunk)
  return without(block, lo, hi)
end

-- Promotes `chunk` when its bitmap would take less memory than its ids in the block.
local function promoteIfSmaller(keys, block, chunk)
  local lo = lowerBound(block, chunk * CHUNK_IDS)
  local hi = lowerBound(block, (chunk + 1) * CHUNK_IDS)
  if hi == lo then return block end
  local bitmapBytes = math.floor((valueAt(block, hi - 1) - chunk * CHUNK_IDS) / 8) + 1
  if bitmapBytes + KEY_BYTES < block.w * (hi - lo) then return promote(keys, block, chunk, lo, hi) end
  return block
end

-- Writes an over-full block as two, split at the chunk boundary nearest its middle id (a
-- block of one chunk only goes to a bitmap instead: 4 KiB at most, no bigger than its ids).
local function splitBlock(keys, starts, start, block)
  local n = size(block)
  local firstChunk = math.floor(valueAt(block, 1) / CHUNK_IDS)
  if firstChunk == math.floor(valueAt(block, n) / CHUNK_IDS) then
    writeList(keys.block .. start, promote(keys, block, firstChunk, 1, n + 1))
    return
  end
  local cut = math.max(math.floor(valueAt(block, math.floor(n / 2) + 1) / CHUNK_IDS), firstChunk + 1)
  local at = lowerBound(block, cut * CHUNK_IDS)
  if size(starts) == 0 then starts = inserted(starts, 1, 0) end
  writeList(keys.blockIndex, inserted(starts, lowerBound(starts, cut), cut))
  writeList(keys.block .. start, without(block, at, n + 1))
  writeList(keys.block .. cut, without(block, 1, at))
end

local function isBitmapChunk(keys, chunk)
  return redis.call('SISMEMBER', keys.chunkIndex, chunk) == 1
end

-- Whether the packed list `raw` (as GET returns it; nil when absent) holds `id`: a binary
-- search over the string itself, no list table (the viewer-state read runs it per relation).
local function packedHas(raw, id)
  if not raw then return false end
  local w = string.byte(raw, 1)
  local lo, hi = 1, (#raw - 1) / w
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local at = 2 + (mid - 1) * w
    local value
    if w == 4 then
      local b1, b2, b3, b4 = string.byte(raw, at, at + 3)
      value = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
    else
      value = 0
      for k = at, at + w - 1 do value = value * 256 + string.byte(raw, k) end
    end
    if value == id then return true end
    if value < id then lo = mid + 1 else hi = mid - 1 end
  end
  return false
end

-- Whether `id` is in each relation of `bases` ("{pN}:<relation>:<type>:<id>"): one MGET reads
-- every relation's block 0, block index and the bitmap of `id`'s chunk. A bitmap key exists
-- exactly when its chunk is in the chunk index (promote writes both; neither is ever removed),
-- so the MGET answers for bitmap chunks without a SISMEMBER; only blocks past 0 need a GET.
local function hasMembers(prefix, bases, id)
  if #bases == 0 then return {} end
  local chunk = math.floor(id / CHUNK_IDS)
  local block, index, bitmap = prefix .. KEY.arrayBlock, prefix .. KEY.arrayIndex, prefix .. KEY.bitmap
  local inChunk = ':' .. chunk
  local names = {}
  for r, base in ipairs(bases) do
    names[3 * r - 2] = block .. base .. ':0'
    names[3 * r - 1] = index .. base
    names[3 * r] = bitmap .. base .. inChunk
  end
  local raw = mgetMany(names)
  local bit = id % CHUNK_IDS
  local answers = {}
  for r, base in ipairs(bases) do
    local bits, starts = raw[3 * r], raw[3 * r - 1]
    if bits then
      local byte = string.byte(bits, math.floor(bit / 8) + 1)
      answers[r] = byte ~= nil and math.floor(byte / 2 ^ (7 - bit % 8)) % 2 == 1
    else
      local start = starts and startIn(decodeList(starts), chunk) or 0
      answers[r] = packedHas(start == 0 and raw[3 * r - 2] or redis.call('GET', block .. base .. ':' .. start), id)
    end
  end
  return answers
end

-- Adds or removes `id`; true when that changed the set.
local function setMember(keys, id, member)
  local chunk = math.floor(id / CHUNK_IDS)
  if isBitmapChunk(keys, chunk) then
    return redis.call('SETBIT', keys.bitmap .. chunk, id % CHUNK_IDS, member and 1 or 0) ~= (member and 1 or 0)
  end
  local starts = readList(keys.blockIndex)
  local start = startIn(starts, chunk)
  local blockKey = keys.block .. start
  local block = readList(blockKey)
  local i = lowerBound(block, id)
  local present = i <= size(block) and valueAt(block, i) == id
  if present == member then return false end
  if not member then
    writeList(blockKey, without(block, i, i + 1))
    return true
  end
  block = promoteIfSmaller(keys, inserted(block, i, id), chunk)
  if size(block) > BLOCK_MAX_IDS then splitBlock(keys, starts, start, block) else writeList(blockKey, block) end
  return true
end

-- Start chunks of every array block: the block index, or block 0 alone without one.
local function blockStarts(keys)
  local starts = readList(keys.blockIndex)
  if size(starts) == 0 then starts = inserted(starts, 1, 0) end
  return starts
end

-- How many ids are in: bitmap chunks' set bits plus array blocks' lengths.
local function countMembers(keys)
  local total = 0
  for _, chunk in ipairs(redis.call('SMEMBERS', keys.chunkIndex)) do
    total = total + redis.call('BITCOUNT', keys.bitmap .. chunk)
  end
  local starts = blockStarts(keys)
  for i = 1, size(starts) do
    local blockKey = keys.block .. valueAt(starts, i)
    local bytes = redis.call('STRLEN', blockKey)
    if bytes > 0 then total = total + (bytes - 1) / string.byte(redis.call('GETRANGE', blockKey, 0, 0)) end
  end
  return total
end

-- Every id in, walked id by id: only for small sets (countMembers first).
local function allMembers(keys)
  local ids = {}
  for _, chunk in ipairs(redis.call('SMEMBERS', keys.chunkIndex)) do
    local bits = redis.call('GET', keys.bitmap .. chunk) or ''
    for byte = 1, #bits do
      local b = string.byte(bits, byte)
      for k = 7, 0, -1 do
        if b >= 2 ^ k then
          ids[#ids + 1] = tonumber(chunk) * CHUNK_IDS + (byte - 1) * 8 + (7 - k)
          b = b - 2 ^ k
        end
      end
    end
  end
  local starts = blockStarts(keys)
  for i = 1, size(starts) do
    local block = readList(keys.block .. valueAt(starts, i))
    for j = 1, size(block) do ids[#ids + 1] = valueAt(block, j) end
  end
  return ids
end
