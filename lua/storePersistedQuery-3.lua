--[[
  Stores an automatic persisted query in a bounded store: at most ARGV[4] documents and
  ARGV[5] bytes of them, each kept ARGV[3] ms after its last registration. Past a bound, the
  least recently registered documents go first, so registrations can never grow Redis
  without limit (with `noeviction` that would starve likes of memory).

  Input:
    KEYS[1] documents        apq:{apq}:docs    (hash: sha256 -> document)
    KEYS[2] registrations    apq:{apq}:lru     (sorted set: sha256 scored by registration ms)
    KEYS[3] bytes stored     apq:{apq}:bytes
    ARGV[1] sha256           ARGV[2] document
    ARGV[3] ttl ms           ARGV[4] max documents     ARGV[5] max bytes

  Output: the number of documents evicted; -2 for invalid arguments
]]
local rcall = redis.call
local ttl, maxCount, maxBytes = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if not ttl or not maxCount or not maxBytes or #ARGV[2] > maxBytes then return -2 end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local function evict(sha)
  rcall('DECRBY', KEYS[3], rcall('HSTRLEN', KEYS[1], sha))
  rcall('HDEL', KEYS[1], sha)
  rcall('ZREM', KEYS[2], sha)
end

if rcall('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  rcall('ZADD', KEYS[2], now, ARGV[1])
  return 0
end
rcall('HSET', KEYS[1], ARGV[1], ARGV[2])
rcall('ZADD', KEYS[2], now, ARGV[1])
rcall('INCRBY', KEYS[3], #ARGV[2])

local evicted = 0
-- Expired ones first (a bounded batch per call: each call frees what it adds, at least).
for _, sha in ipairs(rcall('ZRANGE', KEYS[2], '-inf', now - ttl, 'BYSCORE', 'LIMIT', 0, 100)) do
  evict(sha)
  evicted = evicted + 1
end
while rcall('ZCARD', KEYS[2]) > maxCount or tonumber(rcall('GET', KEYS[3]) or '0') > maxBytes do
  evict(rcall('ZRANGE', KEYS[2], 0, 0)[1])
  evicted = evicted + 1
end
return evicted
