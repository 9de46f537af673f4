-- A viewer's window of views: a (viewer, entity) counts a view at most once per window. The
-- viewer's hash remembers when each entity's view last counted and expires one window after
-- the newest; while the viewer keeps viewing, entries older than the window are dropped (at
-- most every quarter window, once the hash holds more than PRUNE_FROM), so nothing names a
-- viewer's view for long past its window.
local PRUNE_FROM = 256

-- Per entity of `entities` (names "<type>:<id>", distinct), 1 when its view counts now, else 0.
local function claimInWindow(window, windowMs, entities)
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local last = redis.call('HMGET', window, unpack(entities))
  local reply, counted = {}, {}
  for i, entity in ipairs(entities) do
    local at = tonumber(last[i])
    if at and now - at < windowMs then
      reply[i] = 0
    else
      reply[i] = 1
      counted[#counted + 1] = entity
      counted[#counted + 1] = now
    end
  end
  if #counted > 0 then redis.call('HSET', window, unpack(counted)) end

  if redis.call('HLEN', window) > PRUNE_FROM and now - (tonumber(redis.call('HGET', window, '~')) or 0) >= windowMs / 4 then
    local all = redis.call('HGETALL', window)
    local stale = {}
    for j = 1, #all, 2 do
      if all[j] ~= '~' and now - tonumber(all[j + 1]) >= windowMs then stale[#stale + 1] = all[j] end
    end
    for j = 1, #stale, 4000 do redis.call('HDEL', window, unpack(stale, j, math.min(j + 3999, #stale))) end
    redis.call('HSET', window, '~', now)
  end
  redis.call('PEXPIRE', window, windowMs)
  return reply
end
