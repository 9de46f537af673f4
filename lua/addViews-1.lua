--[[
  The entities' side of recording views, for entities whose view counts now (lua/claimViews-1.lua
  said so): all of a request's on a single Redis, one partition's on a Cluster. Each view is
  appended to its partition's buffer (`vbuf:{pN}`), as "<type>:<id> <digest>": the next flush
  adds the buffer up per entity before it folds (lua/foldViews-3.lua), so a view costs one
  list element here and no event.

  Input:
    KEYS[1] buffer of the first entity's partition   vbuf:{pN}   (declared so a Cluster routes the call)
    ARGV[1] key prefix
    ARGV[2..] per entity, three arguments: its partition tag "{pN}", its name "<type>:<id>",
            and the viewer's digest (a decimal integer below 2^48), or '' for a view counted
            in `total` only

  Output: how many views it added; -2 for invalid arguments
]]
--- @include "includes/keyNames"
local rcall = redis.call

local prefix = ARGV[1]
if (#ARGV - 1) % 3 ~= 0 then return -2 end
-- Every argument checked before the first write (no rollback in Redis).
for i = 2, #ARGV, 3 do
  local digest = ARGV[i + 2]
  if digest ~= '' and (not string.match(digest, '^%d+$') or #digest > 15 or tonumber(digest) >= 2 ^ 48) then return -2 end
end

local byTag, tags = {}, {}
for i = 2, #ARGV, 3 do
  local tag, entity, digest = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local views = byTag[tag]
  if not views then
    views = {}
    byTag[tag] = views
    tags[#tags + 1] = tag
  end
  views[#views + 1] = entity .. ' ' .. (digest == '' and '-' or digest)
end
for _, tag in ipairs(tags) do rcall('RPUSH', prefix .. KEY.viewBuffer .. tag, unpack(byTag[tag])) end
return (#ARGV - 1) / 3
