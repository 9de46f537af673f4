-- Packed lists of integers in one Redis string: relation sets' array blocks
-- (includes/relationSet) and the exact sketches of distinct viewers (includes/viewerSketch).
-- A packed list is one width byte (4..7: enough for its largest value, 4 for every value
-- below 2^32) followed by its values, sorted, big-endian, that many bytes each. In memory it
-- stays the string Redis stored (`s`, width byte included): reads index into it, no copy.
local function widthFor(value)
  local w = 4
  while value >= 256 ^ w do w = w + 1 end
  return w
end

local function decodeList(raw)
  if not raw then return { w = 4, s = string.char(4) } end
  return { w = string.byte(raw, 1), s = raw }
end

local function readList(key) return decodeList(redis.call('GET', key)) end

local function size(list) return (#list.s - 1) / list.w end

local function valueAt(list, i)
  local w = list.w
  local at = 2 + (i - 1) * w
  if w == 4 then
    local b1, b2, b3, b4 = string.byte(list.s, at, at + 3)
    return ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  end
  if w == 6 then -- viewer digests (includes/viewerSketch)
    local b1, b2, b3, b4, b5, b6 = string.byte(list.s, at, at + 5)
    return ((((b1 * 256 + b2) * 256 + b3) * 256 + b4) * 256 + b5) * 256 + b6
  end
  local value = 0
  for k = at, at + w - 1 do value = value * 256 + string.byte(list.s, k) end
  return value
end

local function pack(value, w)
  if w == 6 then
    local high, low = math.floor(value / 16777216), value % 16777216
    local h1, l1 = math.floor(high / 65536), math.floor(low / 65536)
    return string.char(h1, math.floor(high / 256) % 256, high % 256, l1, math.floor(low / 256) % 256, low % 256)
  end
  local bytes = {}
  for k = w - 1, 0, -1 do bytes[#bytes + 1] = math.floor(value / 256 ^ k) % 256 end
  return string.char(unpack(bytes))
end

-- First position (1-based) whose value is >= `value`; size + 1 when there is none.
local function lowerBound(list, value)
  local lo, hi = 1, size(list) + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if valueAt(list, mid) < value then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- Byte offset in `s` just before the value at position i.
local function before(list, i) return 1 + (i - 1) * list.w end

-- The list without the values at positions [lo, hi).
local function without(list, lo, hi)
  return { w = list.w, s = string.sub(list.s, 1, before(list, lo)) .. string.sub(list.s, before(list, hi) + 1) }
end

-- The list with every value `w` bytes wide (itself when they are already as wide).
local function widened(list, w)
  if w <= list.w then return list end
  local wide = { string.char(w) }
  for i = 1, size(list) do wide[i + 1] = pack(valueAt(list, i), w) end
  return { w = w, s = table.concat(wide) }
end

-- The list with `value` inserted at position `at`, widened if the value needs more bytes.
local function inserted(list, at, value)
  list = widened(list, widthFor(value))
  local cut = before(list, at)
  return { w = list.w, s = string.sub(list.s, 1, cut) .. pack(value, list.w) .. string.sub(list.s, cut + 1) }
end

local function writeList(key, list)
  if size(list) == 0 then redis.call('DEL', key) else redis.call('SET', key, list.s) end
end
