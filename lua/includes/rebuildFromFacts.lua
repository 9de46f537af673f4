-- Rebuilds one entity's counters from its facts (the relation sets).
--
-- Why the watermark: the facts already include every change whose event is still in
-- flight (appended to the outbox, not yet applied by the aggregator). Counting the facts
-- and then letting those events through would count them twice. So, in this same atomic
-- step, we read the newest outbox id and store it as the entity's watermark; the aggregator
-- (applyCounterBatch) skips this entity's events at or below it. Pending deltas in the
-- aggregation hash come from events already applied, which the facts include too: dropped
-- (the views' are kept with the view slots: keepViews).
-- Needs includes: positions, packedCounters, relationSet, countFromFacts, outbox.
local function rebuildFromFacts(entity, keys, facts, relations)
  local v = countersFromFacts(facts, entity, relations)
  keepViews(v, keys.counters, keys.agg)
  local newest = newestEventId(keys.outbox)
  local applied = redis.call('HGET', keys.aggState, 'event')
  if newest and comparePositions(applied, newest) < 0 then
    redis.call('HSET', keys.watermarks, entity, newest)
  end
  redis.call('DEL', keys.agg)
  redis.call('SET', keys.counters, packCounters(v))
  return v, newest
end
