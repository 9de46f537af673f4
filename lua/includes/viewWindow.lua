-- A viewer's window of views: a (viewer, entity) counts a view at most once per window. The
-- viewer's hash remembers when each entity's view last counted and expires one window after
-- the newest; while the viewer keeps viewing, entries older than the window are dropped (at
-- most every quarter window, once the hash holds more than PRUNE_FROM), so nothing names a
-- viewer's view for long past its window.
local PRUNE_FROM = 256

-- Drops the entries of `window` older than `windowMs` at `now`, at most every quarter window.
local function pruneWindow(window, windowMs, now)
  if redis.call('HLEN', window) <= PRUNE_FROM or now - (tonumber(redis.call('HGET', window, '~')) or 0) < windowMs / 4 then return end
  local all = redis.call('HGETALL', window)
  local stale = {}
  for j = 1, #all, 2 do
    if all[j] ~= '~' and now - tonumber(all[j + 1]) >= windowMs then stale[#stale + 1] = all[j] end
  end
  for j = 1, #stale, 4000 do redis.call('HDEL', window, unpack(stale, j, math.min(j + 3999, #stale))) end
  redis.call('HSET', window, '~', now)
end

-- Per entity named by ARGV[first .. first + n - 1] ("<type>:<id>", distinct, n >= 1), 1 when
-- its view counts at `now` (epoch ms, includes/clock), else 0. The names are read from ARGV in
-- place, and the time is written once as text: this runs for every page a client shows.
local function claimInWindow(window, windowMs, first, n, now)
  local nowText = tostring(now)
  local last = redis.call('HMGET', window, unpack(ARGV, first, first + n - 1))
  local reply, counted = {}, {}
  for i = 1, n do
    local at = tonumber(last[i])
    if at and now - at < windowMs then
      reply[i] = 0
    else
      reply[i] = 1
      counted[#counted + 1] = ARGV[first + i - 1]
      counted[#counted + 1] = nowText
    end
  end
  if #counted > 0 then redis.call('HSET', window, unpack(counted)) end
  pruneWindow(window, windowMs, now)
  redis.call('PEXPIRE', window, windowMs)
  return reply
end
