--[[
  The viewer's side of recording views: which of these entities count a view now. A
  (viewer, entity) counts at most once per window. The viewer's hash remembers when each
  entity's view last counted and expires one window after the newest; while the viewer keeps
  viewing, entries older than the window are dropped (at most every quarter window, once the
  hash holds more than PRUNE_FROM), so nothing names a viewer's view for long past its window.

  Input:
    KEYS[1] the viewer's window   vw:{uN}:<id> or vw:{a}:<address digest>
            (hash: entity -> epoch ms its view last counted; "~" -> ms of the last pruning)
    ARGV[1] window ms   ARGV[2..] entity names "<type>:<id>", distinct

  Output: per entity, 1 when its view counts now, else 0; -2 for invalid arguments
]]
local PRUNE_FROM = 256
local rcall = redis.call

local window = tonumber(ARGV[1])
if not window or window < 1 then return -2 end
local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local entities = { unpack(ARGV, 2) }
local last = rcall('HMGET', KEYS[1], unpack(entities))
local reply, counted = {}, {}
for i, entity in ipairs(entities) do
  local at = tonumber(last[i])
  if at and now - at < window then
    reply[i] = 0
  else
    reply[i] = 1
    counted[#counted + 1] = entity
    counted[#counted + 1] = now
  end
end
if #counted > 0 then rcall('HSET', KEYS[1], unpack(counted)) end

if rcall('HLEN', KEYS[1]) > PRUNE_FROM and now - (tonumber(rcall('HGET', KEYS[1], '~')) or 0) >= window / 4 then
  local all = rcall('HGETALL', KEYS[1])
  local stale = {}
  for j = 1, #all, 2 do
    if all[j] ~= '~' and now - tonumber(all[j + 1]) >= window then stale[#stale + 1] = all[j] end
  end
  for j = 1, #stale, 4000 do rcall('HDEL', KEYS[1], unpack(stale, j, math.min(j + 3999, #stale))) end
  rcall('HSET', KEYS[1], '~', now)
end
rcall('PEXPIRE', KEYS[1], window)
return reply
