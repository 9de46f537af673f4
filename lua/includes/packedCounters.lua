-- Packed counters: an entity's counters as one fixed-width string, 5 fields x uint32 big-endian
-- (slot 0 read, 1 like, 2 fav, 3 comment, 4 repost).
local PACKED_BYTES = 20
local UINT32_MAX = 4294967295

-- The five counters, or nil when the string is missing or malformed (never read as zero).
local function unpackCounters(raw)
  if not raw or #raw ~= PACKED_BYTES then return nil end
  local a, b, c, d, e = struct.unpack('>I4I4I4I4I4', raw)
  return { a, b, c, d, e }
end

local function packCounters(v)
  return struct.pack('>I4I4I4I4I4', v[1], v[2], v[3], v[4], v[5])
end

local function clampCount(n)
  if n < 0 then return 0 end
  if n > UINT32_MAX then return UINT32_MAX end
  return n
end
