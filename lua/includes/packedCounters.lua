-- Packed counters: an entity's counters as one string of uint32 big-endian slots (slot 0 views,
-- 1 like, 2 fav, 3 distinct viewers, 4 repost, then the further slots of src/domain/relations.ts). A
-- string holds at least BASE_SLOTS and ends at its last non-zero slot; slots past its end read
-- as 0, so a kind registered later needs no migration of what is stored.
local BASE_SLOTS = 5
local MAX_SLOTS = 64
local UINT32_MAX = 4294967295

-- The counters (at least BASE_SLOTS of them), or nil when the string is missing or malformed
-- (never read as zero).
local function unpackCounters(raw)
  if not raw then return nil end
  local n = #raw / 4
  if n < BASE_SLOTS or n > MAX_SLOTS or n % 1 ~= 0 then return nil end
  local v = { struct.unpack('>' .. string.rep('I4', n), raw) }
  v[n + 1] = nil -- struct.unpack also returns the position after the last field
  return v
end

-- Packs v (slots may be missing: 0), trimmed after its last non-zero slot.
local function packCounters(v)
  local width = BASE_SLOTS
  for i, x in pairs(v) do
    if i > width and x ~= 0 then width = i end
  end
  local dense = {}
  for i = 1, width do dense[i] = v[i] or 0 end
  return struct.pack('>' .. string.rep('I4', width), unpack(dense))
end

local function clampCount(n)
  if n < 0 then return 0 end
  if n > UINT32_MAX then return UINT32_MAX end
  return n
end

--- @include "includes/viewSlots"

-- Views are counted outside the facts and the event log (lua/addViews-1.lua): counters rebuilt
-- from either take the entity's view slots as they stand, plus the view deltas still pending
-- in its aggregation hash (which the rebuild drops).
local function keepViews(v, countersKey, aggKey)
  local old = unpackCounters(redis.call('GET', countersKey)) or {}
  for _, slot in pairs(VIEW_SLOT) do
    local pending = tonumber(redis.call('HGET', aggKey, slot)) or 0
    v[slot + 1] = clampCount((old[slot + 1] or 0) + pending)
  end
end
