-- Live counts (GraphQL subscriptions): the entities whose counters changed, with their new
-- values and the asOf that covers them, published on the partition's shard channel once per
-- flush pass. Pub/sub is at most once: a push lost in transit is made good by the next one
-- for that entity, and a client's query always reads the stored value.
local PUSH_CHUNK = 500

-- Publishes every entity in `queue` (a set of entity names) with its counters read from
-- `countersPrefix .. name`, in chunks, then empties the queue. Returns how many were published.
local function pushQueued(queue, countersPrefix, channel, asOf)
  local names = rcall('SMEMBERS', queue)
  if #names == 0 then return 0 end
  rcall('DEL', queue)
  -- When it was published (Redis's clock), so replicas can measure the fan-out lag.
  local now = rcall('TIME')
  local at = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  for first = 1, #names, PUSH_CHUNK do
    local counts = {}
    for i = first, math.min(first + PUSH_CHUNK - 1, #names) do
      local v = unpackCounters(rcall('GET', countersPrefix .. names[i]))
      if v then counts[names[i]] = v end
    end
    if next(counts) then rcall('SPUBLISH', channel, cjson.encode({ asOf = asOf, at = at, counts = counts })) end
  end
  return #names
end
