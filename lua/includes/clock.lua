-- Redis's clock in epoch ms: one clock for every process's scripts, so windows and buckets
-- do not depend on which API process wrote them.
local function nowMs()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
