--[[
  The entities' side of recording views on a Redis Cluster, for entities whose view counts now
  (lua/claimViews-1.lua said so), one partition's per call: each view is appended to its
  partition's buffer (includes/viewBuffer).

  Input:
    KEYS[1] buffer of the first entity's partition   vbuf:{pN}   (declared so a Cluster routes the call)
    ARGV[1] key prefix
    ARGV[2..] per entity, three arguments: its partition tag "{pN}", its name "<type>:<id>",
            and the viewer's digest (a decimal integer below 2^48), or '' for a view counted
            in `total` only

  Output: how many views it added; -2 for invalid arguments
]]
--- @include "includes/viewBuffer"
if (#ARGV - 1) % 3 ~= 0 then return -2 end
local tags, elements = {}, {}
for i = 2, #ARGV, 3 do
  -- Every argument checked before the first write (no rollback in Redis).
  if not validDigest(ARGV[i + 2]) then return -2 end
  tags[#tags + 1] = ARGV[i]
  elements[#elements + 1] = ARGV[i + 1] .. viewSuffix(ARGV[i + 2])
end
bufferViews(ARGV[1], tags, elements)
return #tags
