--[[
  Records a viewer's views on a single Redis, in one step: which of these entities count a view
  now by the viewer's window (includes/viewWindow), and those appended to their partitions'
  buffers (includes/viewBuffer). A Cluster keeps the window and the buffers in different slots,
  so there lua/claimViews-1.lua and lua/addViews-1.lua take the two steps.

  Input:
    KEYS[1] the viewer's window   vw:{uN}:<id> or vwa:<address digest>
    KEYS[2] buffer of the first entity's partition   vbuf:{pN}
    ARGV[1] window ms   ARGV[2] key prefix
    ARGV[3] the viewer's digest (a decimal integer below 2^48), or '' for views counted in `total` only
    ARGV[4..] the entities' names "<type>:<id>" (n of them, distinct), then their partition
            tags "{pN}", in the same order

  Output: per entity, 1 when its view counted now, else 0; -2 for invalid arguments
]]
--- @include "includes/viewWindow"
--- @include "includes/viewBuffer"
local windowMs, prefix, digest = tonumber(ARGV[1]), ARGV[2], ARGV[3]
if not windowMs or windowMs < 1 or not validDigest(digest) or (#ARGV - 3) % 2 ~= 0 then return -2 end

local n = (#ARGV - 3) / 2
local counted = claimInWindow(KEYS[1], windowMs, 4, n)
local tags, elements, suffix = {}, {}, viewSuffix(digest)
for i = 1, n do
  if counted[i] == 1 then
    tags[#tags + 1] = ARGV[3 + n + i]
    elements[#elements + 1] = ARGV[3 + i] .. suffix
  end
end
if #tags > 0 then bufferViews(prefix, tags, elements) end
return counted
