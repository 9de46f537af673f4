--[[
  The viewer's side of recording views on a Redis Cluster, where the viewer's window and the
  entities' buffers are in different slots: which of these entities count a view now
  (includes/viewWindow). On a single Redis, lua/recordViews-3.lua does this and the buffering
  in one step.

  Input:
    KEYS[1] the viewer's window   vw:{uN}:<id> or vwa:<address digest>
            (hash: entity -> epoch ms its view last counted; "~" -> ms of the last pruning)
    ARGV[1] window ms   ARGV[2..] entity names "<type>:<id>", distinct

  Output: per entity, 1 when its view counts now, else 0; -2 for invalid arguments
]]
--- @include "includes/clock"
--- @include "includes/viewWindow"
local windowMs = tonumber(ARGV[1])
if not windowMs or windowMs < 1 then return -2 end
return claimInWindow(KEYS[1], windowMs, 2, #ARGV - 1, nowMs())
