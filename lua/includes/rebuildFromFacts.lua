-- Rebuilds one entity's counters from its facts (the relation bitmaps).
--
-- Why the watermark: the bitmaps already include every change whose event is still in
-- flight (appended to the outbox, not yet applied by the aggregator). Counting the bitmaps
-- and then letting those events through would count them twice. So, in this same atomic
-- step, we read the newest outbox id and store it as the entity's watermark; the aggregator
-- (applyCounterBatch) skips this entity's events at or below it. Pending deltas in the
-- aggregation hash come from events already applied, which the bitmaps include too: dropped.
-- Needs includes: positions, sds, countFromFacts, outbox.
local function rebuildFromFacts(entity, keys, prefixes, metrics)
  local v = sdsFromFacts(prefixes.bitmap, prefixes.chunkIndex, entity, metrics)
  local newest = newestEventId(keys.outbox)
  local applied = redis.call('HGET', keys.aggState, 'event')
  if newest and comparePositions(applied, newest) < 0 then
    redis.call('HSET', keys.watermarks, entity, newest)
  end
  redis.call('DEL', keys.agg)
  redis.call('SET', keys.sds, sdsEncode(v))
  return v, newest
end
