-- One relation's members (user ids) for one (metric, entity), stored adaptively like a roaring
-- bitmap. Ids fall in chunks of 32,768; each chunk lives in exactly one of two places:
--   * an array block: a string of sorted big-endian ids, `ra:<base>:<start chunk>`,
--     shared by every non-bitmap chunk from its start up to the next block's start. Without a
--     block index (`rai:<base>`, a sorted set scored by start chunk) there is one block, start 0.
--     Sparse ids cost 4 bytes each plus one key per entity, where a bitmap chunk costs ~4 KiB.
--   * a bitmap chunk: `bm:<base>:<chunk>` (32,768 bits), listed in `bmi:<base>`. A chunk is
--     promoted from its block once its bitmap (up to its highest bit) plus a key is smaller.
-- Readers and writers go through these functions only, inside one script: always atomic.
-- Bitmaps never demote: a chunk that drops back to a few ids keeps at most one plain bitmap.
local CHUNK_IDS = 32768
-- A block splits at a chunk boundary beyond this many ids, so a write rewrites a few KiB at most.
local BLOCK_MAX_IDS = 1024
-- What one more key costs Redis, roughly (dict entry, key name, object header).
local KEY_BYTES = 48

-- Key names of one relation. `base` is "<metric>:<type>:<id>"; `tag` the partition's "{pN}".
local function relationKeys(prefix, tag, base)
  local name = tag .. ':' .. base
  return {
    bitmap = prefix .. 'bm:' .. name .. ':',
    chunkIndex = prefix .. 'bmi:' .. name,
    block = prefix .. 'ra:' .. name .. ':',
    blockIndex = prefix .. 'rai:' .. name,
  }
end

-- A block is one width byte (4..7: enough for its largest id, 4 for every id below 2^32)
-- followed by its ids, sorted, big-endian, that many bytes each.
local function widthFor(id)
  local w = 4
  while id >= 256 ^ w do w = w + 1 end
  return w
end

local function readBlock(key)
  local raw = redis.call('GET', key)
  if not raw then return { w = 4, s = '' } end
  return { w = string.byte(raw, 1), s = string.sub(raw, 2) }
end

local function size(b) return #b.s / b.w end

local function idAt(b, i)
  local id = 0
  for k = (i - 1) * b.w + 1, i * b.w do id = id * 256 + string.byte(b.s, k) end
  return id
end

local function packId(id, w)
  local bytes = {}
  for k = w - 1, 0, -1 do bytes[#bytes + 1] = math.floor(id / 256 ^ k) % 256 end
  return string.char(unpack(bytes))
end

-- First position (1-based) whose id is >= `id`; size + 1 when there is none.
local function lowerBound(b, id)
  local lo, hi = 1, size(b) + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if idAt(b, mid) < id then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- The block without the ids at positions [lo, hi), or with `id` before position `at`.
local function without(b, lo, hi)
  return { w = b.w, s = string.sub(b.s, 1, (lo - 1) * b.w) .. string.sub(b.s, (hi - 1) * b.w + 1) }
end

local function inserted(b, at, id)
  local w = widthFor(id)
  if w > b.w then
    local wide = {}
    for i = 1, size(b) do wide[i] = packId(idAt(b, i), w) end
    b = { w = w, s = table.concat(wide) }
  end
  return { w = b.w, s = string.sub(b.s, 1, (at - 1) * b.w) .. packId(id, b.w) .. string.sub(b.s, (at - 1) * b.w + 1) }
end

local function isBitmapChunk(keys, chunk)
  return redis.call('SISMEMBER', keys.chunkIndex, chunk) == 1
end

-- Start chunk of the array block that holds `chunk` (when it is not a bitmap).
local function blockStart(keys, chunk)
  local found = redis.call('ZRANGE', keys.blockIndex, chunk, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)
  return found[1] or '0'
end

local function writeBlock(key, b)
  if b.s == '' then redis.call('DEL', key) else redis.call('SET', key, string.char(b.w) .. b.s) end
end

-- Moves the ids of `chunk` at positions [lo, hi) of block `b` into the chunk's own bitmap;
-- returns the block without them.
local function promote(keys, b, chunk, lo, hi)
  local bitmapKey = keys.bitmap .. chunk
  local first = chunk * CHUNK_IDS
  for i = lo, hi - 1 do redis.call('SETBIT', bitmapKey, idAt(b, i) - first, 1) end
  redis.call('SADD', keys.chunkIndex, chunk)
  return without(b, lo, hi)
end

-- Promotes `chunk` when its bitmap would take less memory than its ids in the block.
local function promoteIfSmaller(keys, b, chunk)
  local lo = lowerBound(b, chunk * CHUNK_IDS)
  local hi = lowerBound(b, (chunk + 1) * CHUNK_IDS)
  if hi == lo then return b end
  local bitmapBytes = math.floor((idAt(b, hi - 1) - chunk * CHUNK_IDS) / 8) + 1
  if bitmapBytes + KEY_BYTES < b.w * (hi - lo) then return promote(keys, b, chunk, lo, hi) end
  return b
end

-- Writes an over-full block as two, split at the chunk boundary nearest its middle id (a
-- block of one chunk only goes to a bitmap instead: 4 KiB at most, no bigger than its ids).
local function splitBlock(keys, start, b)
  local n = size(b)
  local firstChunk = math.floor(idAt(b, 1) / CHUNK_IDS)
  if firstChunk == math.floor(idAt(b, n) / CHUNK_IDS) then
    writeBlock(keys.block .. start, promote(keys, b, firstChunk, 1, n + 1))
    return
  end
  local cut = math.max(math.floor(idAt(b, math.floor(n / 2) + 1) / CHUNK_IDS), firstChunk + 1)
  local at = lowerBound(b, cut * CHUNK_IDS)
  redis.call('ZADD', keys.blockIndex, 'NX', 0, '0')
  redis.call('ZADD', keys.blockIndex, cut, tostring(cut))
  writeBlock(keys.block .. start, without(b, at, n + 1))
  writeBlock(keys.block .. cut, without(b, 1, at))
end

local function hasMember(keys, id)
  local chunk = math.floor(id / CHUNK_IDS)
  if isBitmapChunk(keys, chunk) then
    return redis.call('GETBIT', keys.bitmap .. chunk, id % CHUNK_IDS) == 1
  end
  local b = readBlock(keys.block .. blockStart(keys, chunk))
  local i = lowerBound(b, id)
  return i <= size(b) and idAt(b, i) == id
end

-- Adds or removes `id`; true when that changed the set.
local function setMember(keys, id, member)
  local chunk = math.floor(id / CHUNK_IDS)
  if isBitmapChunk(keys, chunk) then
    return redis.call('SETBIT', keys.bitmap .. chunk, id % CHUNK_IDS, member and 1 or 0) ~= (member and 1 or 0)
  end
  local start = blockStart(keys, chunk)
  local blockKey = keys.block .. start
  local b = readBlock(blockKey)
  local i = lowerBound(b, id)
  local present = i <= size(b) and idAt(b, i) == id
  if present == member then return false end
  if not member then
    writeBlock(blockKey, without(b, i, i + 1))
    return true
  end
  b = promoteIfSmaller(keys, inserted(b, i, id), chunk)
  if size(b) > BLOCK_MAX_IDS then splitBlock(keys, start, b) else writeBlock(blockKey, b) end
  return true
end

-- How many ids are in: bitmap chunks' set bits plus array blocks' lengths.
local function countMembers(keys)
  local total = 0
  for _, chunk in ipairs(redis.call('SMEMBERS', keys.chunkIndex)) do
    total = total + redis.call('BITCOUNT', keys.bitmap .. chunk)
  end
  local starts = redis.call('ZRANGE', keys.blockIndex, 0, -1)
  if #starts == 0 then starts = { '0' } end
  for _, start in ipairs(starts) do
    local blockKey = keys.block .. start
    local bytes = redis.call('STRLEN', blockKey)
    if bytes > 0 then total = total + (bytes - 1) / string.byte(redis.call('GETRANGE', blockKey, 0, 0)) end
  end
  return total
end
