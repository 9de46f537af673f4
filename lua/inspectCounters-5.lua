--[[
  Read-only snapshot for reconciliation: an entity's counters, its facts, and everything in
  between (deltas aggregated but not folded, events not aggregated yet), taken in one atomic
  step so that, for each fact-backed field,

      counters + pending + in flight = facts

  holds exactly unless something drifted, even while writes keep arriving.

  Input:
    KEYS[1] packed counters          cnt:{pN}:v1:<type>:<id>
    KEYS[2] aggregation hash      agg:{pN}:v1:<type>:<id>
    KEYS[3] aggregator state      aggstate:{pN}
    KEYS[4] outbox stream         ob:{pN}
    KEYS[5] rebuild watermarks    rw:{pN}

    ARGV[1] entity type   ARGV[2] entity id
    ARGV[3] key prefix            ARGV[4] partition tag "{pN}" (to reach the facts)
    ARGV[5] bitmap-backed relations, e.g. "like:1,fav:2"
    ARGV[6] most in-flight events to scan

  Output:
    { 0 }  not checkable now (a rebuild watermark is pending, or too many events in flight)
    { 1, countersValid, then per relation: counter, facts, pending, inFlight }
]]
local rcall = redis.call
--- @include "includes/packedCounters"
--- @include "includes/relationSet"
--- @include "includes/countFromFacts"

local entity = ARGV[1] .. ':' .. ARGV[2]
if rcall('HEXISTS', KEYS[5], entity) == 1 then return { 0 } end
local limit = tonumber(ARGV[6])

local inFlight = {}
local applied = rcall('HGET', KEYS[3], 'event')
local start = applied and ('(' .. applied) or '-'
local entries = rcall('XRANGE', KEYS[4], start, '+', 'COUNT', limit + 1)
if #entries > limit then return { 0 } end
for _, entry in ipairs(entries) do
  local f = {}
  for i = 1, #entry[2], 2 do f[entry[2][i]] = entry[2][i + 1] end
  if f.e == ARGV[1] and f.i == ARGV[2] then
    local slot = tonumber(f.x)
    inFlight[slot] = (inFlight[slot] or 0) + tonumber(f.d)
  end
end

local packed = unpackCounters(rcall('GET', KEYS[1]))
local reply = { 1, packed and 1 or 0 }
for _, relation in ipairs(parseRelations(ARGV[5])) do
  local base = relation[1] .. ':' .. entity
  local slot = relation[2]
  reply[#reply + 1] = packed and packed[slot + 1] or 0
  reply[#reply + 1] = countMembers(relationKeys(ARGV[3], ARGV[4], base))
  reply[#reply + 1] = tonumber(rcall('HGET', KEYS[2], slot) or '0')
  reply[#reply + 1] = inFlight[slot] or 0
end
return reply
