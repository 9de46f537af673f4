--[[
  Rebuilds one entity's counters from its facts (see includes/rebuildFromFacts for why the
  watermark makes this safe while events are still in flight).

  Input:
    KEYS[1] packed counters          cnt:{pN}:v1:<type>:<id>
    KEYS[2] aggregation hash      agg:{pN}:v1:<type>:<id>
    KEYS[3] aggregator state      aggstate:{pN}
    KEYS[4] outbox stream         ob:{pN}
    KEYS[5] rebuild watermarks    rw:{pN}

    ARGV[1] entity ("<type>:<id>")
    ARGV[2] key prefix            ARGV[3] partition tag "{pN}" (to reach the facts)
    ARGV[4] bitmap-backed relations, e.g. "like:1,fav:2"

  Output: { watermark or '', the counters... (at least five) }
]]
--- @include "includes/positions"
--- @include "includes/packedCounters"
--- @include "includes/relationSet"
--- @include "includes/countFromFacts"
--- @include "includes/outbox"
--- @include "includes/rebuildFromFacts"

local v, newest = rebuildFromFacts(ARGV[1],
  { counters = KEYS[1], agg = KEYS[2], aggState = KEYS[3], outbox = KEYS[4], watermarks = KEYS[5] },
  { prefix = ARGV[2], tag = ARGV[3] }, parseRelations(ARGV[4]))
local reply = { newest or '' }
for slot, count in ipairs(v) do reply[slot + 1] = count end
return reply
