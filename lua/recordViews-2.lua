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
    ARGV[4..] per entity, two arguments: its partition tag "{pN}" and its name "<type>:<id>"; distinct

  Output: per entity, 1 when its view counted now, else 0; -2 for invalid arguments
]]
--- @include "includes/viewWindow"
--- @include "includes/viewBuffer"
local windowMs, prefix, digest = tonumber(ARGV[1]), ARGV[2], ARGV[3]
if not windowMs or windowMs < 1 or not validDigest(digest) or (#ARGV - 3) % 2 ~= 0 then return -2 end

local tags, entities = {}, {}
for i = 4, #ARGV, 2 do
  tags[#tags + 1] = ARGV[i]
  entities[#entities + 1] = ARGV[i + 1]
end
local counted = claimInWindow(KEYS[1], windowMs, entities)
local views = {}
for i, now in ipairs(counted) do
  if now == 1 then views[#views + 1] = { tag = tags[i], entity = entities[i], digest = digest } end
end
if #views > 0 then bufferViews(prefix, views) end
return counted
