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
