--[[
  Takes a bounded number of entities whose views changed since they were last persisted, with
  their views as they stand: `total` and `unique` from the packed counters plus what is still
  pending in the aggregation hash, and the sketch of distinct viewers. A sketch that is a
  HyperLogLog is counted here first, once for all the views since (lua/addViews-1.lua does
  not), and the `unique` slot moves to its count. An entity whose facts
  Redis does not hold (it lost its data and has not restored this entity yet), or whose
  counters are missing, stays pending: its views would be only some of them, and must not
  replace PostgreSQL's.

  Input:
    KEYS[1] views to persist     vpend:{pN}
    KEYS[2] dirty set            dirty:{pN}
    ARGV[1] key prefix   ARGV[2] partition tag "{pN}"
    ARGV[3] counters prefix   ARGV[4] aggregation hash prefix   ARGV[5] sketch prefix
    ARGV[6] most entities to take

  Output: { Redis's clock (epoch ms), then per entity taken: name, total, unique, sketch ('' for none) }
]]
--- @include "includes/viewSlots"
--- @include "includes/packedCounters"
--- @include "includes/readiness"
--- @include "includes/viewerSketch"
local rcall = redis.call

local limit = tonumber(ARGV[6])
if not limit or limit < 1 then return -2 end
local time = rcall('TIME')
local reply = { tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) }
local waiting = {}
for _, entity in ipairs(rcall('SPOP', KEYS[1], limit)) do
  local counters = unpackCounters(rcall('GET', ARGV[3] .. entity))
  if counters and entityReady(ARGV[1], ARGV[2], entity) then
    local aggKey, sketchKey = ARGV[4] .. entity, ARGV[5] .. entity
    local function current(slot) return (counters[slot + 1] or 0) + (tonumber(rcall('HGET', aggKey, slot)) or 0) end
    local sketch = rcall('GET', sketchKey) or ''
    local unique = current(VIEW_SLOT.unique)
    if isHll(sketch) then
      local counted = rcall('PFCOUNT', sketchKey)
      if counted ~= unique then
        rcall('HINCRBY', aggKey, VIEW_SLOT.unique, counted - unique)
        rcall('SADD', KEYS[2], entity)
        unique = counted
      end
    end
    reply[#reply + 1] = entity
    reply[#reply + 1] = current(VIEW_SLOT.total)
    reply[#reply + 1] = unique
    reply[#reply + 1] = sketch
  else
    waiting[#waiting + 1] = entity
  end
end
if #waiting > 0 then rcall('SADD', KEYS[1], unpack(waiting)) end
return reply
