--[[
  Applies one partition's batch of counter events, already summed per entity and field, to
  the aggregation hashes. The applied position is recorded in the same step, so a batch
  that is delivered again (the consumer died before acknowledging) is recognised and skipped
  instead of being counted twice.

  Input:
    KEYS[1] aggregator state   aggstate:{pN}  (hash: "pos:<source>" -> position, "event" -> event id)
    KEYS[2] dirty set          dirty:{pN}
    KEYS[3] rebuild watermarks rw:{pN}        (hash: entity -> event id already in its counters)

    ARGV[1] source (which log the positions belong to: "ob", the outbox ids, whichever log carried them)
    ARGV[2] position of the batch's first event   ARGV[3] position of its last event
    ARGV[4] id of the batch's newest event
    ARGV[5] aggregation hash key prefix (agg:{pN}:v1:)
    ARGV[6] number of entities, then per entity:
            name, first event id, last event id, number of fields, then (counter slot, delta) pairs

  Output:
    { 1 }                       applied
    { 0, applied }              skipped: every event is at or below the applied position
    { -1, applied }             the batch straddles the applied position: drop events at or
                                below it and call again
    { -3, entity, watermark }   that entity was rebuilt in the middle of this batch: drop its
                                events at or below the watermark and call again
    -2                          invalid arguments
]]
local rcall = redis.call
--- @include "includes/positions"
--- @include "includes/packedCounters"

local source, first, last, newest = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if source == '' or not isPosition(first) or not isPosition(last) or not isPosition(newest)
  or comparePositions(first, last) > 0 then
  return -2
end

local positionField = 'pos:' .. source
local applied = rcall('HGET', KEYS[1], positionField)
if comparePositions(last, applied) <= 0 then return { 0, applied } end
if comparePositions(first, applied) <= 0 then return { -1, applied } end

-- Validate everything and decide per entity before the first write (no rollback in Redis).
local entities = {}
local count = tonumber(ARGV[6])
if not count then return -2 end
local i = 7
for _ = 1, count do
  local name, firstEvent, lastEvent, fields = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  if not name or not isPosition(firstEvent) or not isPosition(lastEvent) or not fields then return -2 end
  local watermark = rcall('HGET', KEYS[3], name)
  local apply = true
  if watermark then
    if comparePositions(lastEvent, watermark) <= 0 then
      apply = false -- the rebuild already counted every event of this entity in the batch
    elseif comparePositions(firstEvent, watermark) <= 0 then
      return { -3, name, watermark }
    end
  end
  local deltas = {}
  for f = 0, fields - 1 do
    local slot, delta = tonumber(ARGV[i + 4 + 2 * f]), tonumber(ARGV[i + 5 + 2 * f])
    if not slot or slot < 0 or slot >= MAX_SLOTS or slot % 1 ~= 0 or not delta then return -2 end
    deltas[#deltas + 1] = { slot, delta }
  end
  entities[#entities + 1] = { name = name, apply = apply, deltas = deltas, watermark = watermark }
  i = i + 4 + 2 * fields
end

for _, entity in ipairs(entities) do
  if entity.apply and #entity.deltas > 0 then
    local aggKey = ARGV[5] .. entity.name
    for _, d in ipairs(entity.deltas) do
      rcall('HINCRBY', aggKey, d[1], d[2])
    end
    rcall('SADD', KEYS[2], entity.name)
  end
  -- Events arrive in order: once one is past the watermark, the watermark has done its job.
  if entity.watermark and entity.apply then rcall('HDEL', KEYS[3], entity.name) end
end

rcall('HSET', KEYS[1], positionField, last)
if comparePositions(newest, rcall('HGET', KEYS[1], 'event')) > 0 then
  rcall('HSET', KEYS[1], 'event', newest)
end
return { 1 }
