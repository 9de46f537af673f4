-- The id of the newest event ever appended to an outbox stream (nil before the first one).
-- Read from the stream's metadata, so it survives trimming.
local function newestEventId(outboxKey)
  if redis.call('EXISTS', outboxKey) == 0 then return nil end
  local info = redis.call('XINFO', 'STREAM', outboxKey)
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      return info[i + 1] ~= '0-0' and info[i + 1] or nil
    end
  end
  return nil
end

-- The instant before which every change is covered by a consumer that has handled the
-- outbox up to event `handled` (nil: nothing yet): the time of the first event it has not
-- handled, or now when it has handled them all. Needs include: positions.
local function coveredUntil(handled, outboxKey)
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local newest = newestEventId(outboxKey)
  if not newest or comparePositions(handled, newest) >= 0 then return now end
  local start = handled and ('(' .. handled) or '-'
  local nextEntry = redis.call('XRANGE', outboxKey, start, '+', 'COUNT', 1)[1]
  if nextEntry then return tonumber(string.match(nextEntry[1], '^(%d+)')) end
  -- The next event was trimmed from the outbox (it went on to Kafka) and is not handled
  -- yet: all we can promise is what the handled event's time promises.
  return handled and tonumber(string.match(handled, '^(%d+)')) or 0
end
