--[[
  Switches a bounded number of entities from their live counters to the counters replay
  recomputed from the log, each entity atomically.

  Replay summed every event up to `replayedThrough`; the aggregator has applied events up to
  `applied`. The live counters plus the entity's aggregation hash hold exactly the events up
  to `applied`; so the switched value is the replayed sum, plus the events in
  (replayedThrough, applied], minus those in (applied, replayedThrough] (the aggregator will
  still deliver those). The entity's aggregation hash and rebuild watermark are dropped:
  after the switch its counters hold every event up to `applied`, no more, no less. Its view
  slots, which no event moves, are kept (includes/packedCounters: keepViews).

  Input:
    KEYS[1] replayed entities (set)   rpl:{pN}:entities
    KEYS[2] aggregator state           aggstate:{pN}
    KEYS[3] outbox stream              ob:{pN}
    KEYS[4] rebuild watermarks         rw:{pN}

    ARGV[1] replayed through (event id)   ARGV[2] most entities per call
    ARGV[3] replayed sums prefix (hash per entity)   ARGV[4] counters prefix   ARGV[5] aggregation hash prefix

  Output: { entities switched, entities left }
]]
local rcall = redis.call
--- @include "includes/positions"
--- @include "includes/packedCounters"

local through, limit = ARGV[1], tonumber(ARGV[2])
if not isPosition(through) or not limit then return -2 end
local applied = rcall('HGET', KEYS[2], 'event') or '0-0'

local entities = rcall('SPOP', KEYS[1], limit)
local wanted = {}
for _, entity in ipairs(entities) do wanted[entity] = {} end

-- Events between the two positions, signed by which side of `applied` they fall on.
local order = comparePositions(through, applied)
if order ~= 0 then
  local low, high, sign = through, applied, 1
  if order > 0 then low, high, sign = applied, through, -1 end
  for _, entry in ipairs(rcall('XRANGE', KEYS[3], '(' .. low, high)) do
    local f = {}
    for i = 1, #entry[2], 2 do f[entry[2][i]] = entry[2][i + 1] end
    local window = wanted[(f.e or '') .. ':' .. (f.i or '')]
    if window then
      local slot = tonumber(f.x)
      window[slot] = (window[slot] or 0) + sign * tonumber(f.d)
    end
  end
end

for _, entity in ipairs(entities) do
  local replayed = rcall('HGETALL', ARGV[3] .. entity)
  local v = { 0, 0, 0, 0, 0 }
  for i = 1, #replayed, 2 do v[tonumber(replayed[i]) + 1] = tonumber(replayed[i + 1]) end
  for slot, delta in pairs(wanted[entity]) do v[slot + 1] = (v[slot + 1] or 0) + delta end
  for slot, count in pairs(v) do v[slot] = clampCount(count) end
  keepViews(v, ARGV[4] .. entity, ARGV[5] .. entity)
  rcall('SET', ARGV[4] .. entity, packCounters(v))
  rcall('DEL', ARGV[5] .. entity, ARGV[3] .. entity)
  rcall('HDEL', KEYS[4], entity)
end
return { #entities, rcall('SCARD', KEYS[1]) }
