--[[
  Folds the pending deltas of dirty entities into their packed counters, a bounded number of
  entities per call. Each entity's hash is read, deleted and folded in this one atomic step,
  so a write landing between "read" and "delete" cannot be lost, and the dirty set is a
  plain set: no KEYS, no SCAN.

  A flush pass renames `dirty` to `folding` and remembers the asOf that will be true once
  `folding` is empty; new deltas meanwhile mark entities in a fresh `dirty` set. When the
  last entity of the pass is folded, that asOf is published to `flushed`, and the entities
  whose counters the pass changed are pushed with their new values on the partition's shard
  channel (live counts; includes/pushCounts).

  Input:
    KEYS[1] dirty set             dirty:{pN}
    KEYS[2] set being folded      dirtyfold:{pN}
    KEYS[3] flush state           flushstate:{pN}   (hash: asOf of the pass in progress)
    KEYS[4] published watermark   flushed:{pN}      (epoch ms)
    KEYS[5] aggregator state      aggstate:{pN}
    KEYS[6] outbox stream         ob:{pN}
    KEYS[7] rebuild watermarks    rw:{pN}
    KEYS[8] changed in this pass  pushq:{pN}        (set of entity names to push)

    ARGV[1] most entities to fold in this call
    ARGV[2] aggregation hash prefix   ARGV[3] counters prefix
    ARGV[4] key prefix                ARGV[5] partition tag "{pN}" (to reach the facts)
    ARGV[6] bitmap-backed relations, e.g. "like:1,fav:2"
    ARGV[7] shard channel of the partition's live counts   counts:{pN}
    ARGV[8] the latest asOf a new pass may note (epoch ms): when the partition's buffered
            views were last added up (lua/foldViews-3.lua), so the views hold every one
            recorded before it too

  Output: { entities folded, entities left in this pass, rebuilt from facts, entities pushed }
]]
local rcall = redis.call
--- @include "includes/positions"
--- @include "includes/packedCounters"
--- @include "includes/relationSet"
--- @include "includes/countFromFacts"
--- @include "includes/outbox"
--- @include "includes/rebuildFromFacts"
--- @include "includes/pushCounts"

local limit = tonumber(ARGV[1])
if not limit or limit < 1 or not tonumber(ARGV[8]) then return -2 end
local relations = parseRelations(ARGV[6])

-- The asOf that holds once everything aggregated so far is folded: every change
-- acknowledged before the first event the aggregator has not applied yet.
local function asOfWhenFolded()
  return math.min(coveredUntil(rcall('HGET', KEYS[5], 'event'), KEYS[6]), tonumber(ARGV[8]))
end

local function publish(asOf)
  local current = tonumber(rcall('GET', KEYS[4]))
  if not current or asOf > current then rcall('SET', KEYS[4], asOf) end
end

if rcall('EXISTS', KEYS[2]) == 0 then
  if rcall('EXISTS', KEYS[1]) == 0 then
    publish(asOfWhenFolded())
    return { 0, 0, 0, 0 }
  end
  rcall('HSET', KEYS[3], 'asOf', asOfWhenFolded())
  rcall('RENAME', KEYS[1], KEYS[2])
end

local rebuilt = 0
local entities = rcall('SPOP', KEYS[2], limit)
for _, entity in ipairs(entities) do
  local aggKey = ARGV[2] .. entity
  local deltas = rcall('HGETALL', aggKey)
  if #deltas > 0 then
    local countersKey = ARGV[3] .. entity
    local v = unpackCounters(rcall('GET', countersKey))
    if v then
      rcall('DEL', aggKey)
      local changed = false
      for f = 1, #deltas, 2 do
        local slot = tonumber(deltas[f]) + 1
        local before = v[slot] or 0
        v[slot] = clampCount(before + tonumber(deltas[f + 1]))
        if v[slot] ~= before then changed = true end
      end
      if changed then
        rcall('SET', countersKey, packCounters(v))
        rcall('SADD', KEYS[8], entity)
      end
    else
      -- Missing or malformed counters are never folded onto zeros: start again from the facts.
      rebuildFromFacts(entity,
        { counters = countersKey, agg = aggKey, aggState = KEYS[5], outbox = KEYS[6], watermarks = KEYS[7] },
        { prefix = ARGV[4], tag = ARGV[5] }, relations)
      rcall('SADD', KEYS[8], entity)
      rebuilt = rebuilt + 1
    end
  end
end

local remaining = rcall('SCARD', KEYS[2])
local pushed = 0
if remaining == 0 then
  local asOf = tonumber(rcall('HGET', KEYS[3], 'asOf'))
  if asOf then publish(asOf) end
  rcall('HDEL', KEYS[3], 'asOf')
  pushed = pushQueued(KEYS[8], ARGV[3], ARGV[7], tonumber(rcall('GET', KEYS[4])) or 0)
end
return { #entities, remaining, rebuilt, pushed }
