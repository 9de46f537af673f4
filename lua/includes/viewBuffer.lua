-- The partitions' buffers of views (`vbuf:{pN}`, lists of "<type>:<id> <digest>", digest '-'
-- for a view counted in `total` only): the next flush adds a buffer up per entity before it
-- folds (lua/foldViews-3.lua), so a view costs one list element and no event.
--- @include "includes/keyNames"

-- Whether `digest` is one a sketch takes: '' (none) or a decimal integer below 2^48.
local function validDigest(digest)
  return digest == '' or (string.match(digest, '^%d+$') ~= nil and #digest <= 15 and tonumber(digest) < 2 ^ 48)
end

-- Appends one view per entry of `views` ({ tag = "{pN}", entity = "<type>:<id>", digest }),
-- each to its partition's buffer: one RPUSH per partition.
local function bufferViews(prefix, views)
  local byTag, tags = {}, {}
  for _, view in ipairs(views) do
    local buffered = byTag[view.tag]
    if not buffered then
      buffered = {}
      byTag[view.tag] = buffered
      tags[#tags + 1] = view.tag
    end
    buffered[#buffered + 1] = view.entity .. ' ' .. (view.digest == '' and '-' or view.digest)
  end
  for _, tag in ipairs(tags) do redis.call('RPUSH', prefix .. KEY.viewBuffer .. tag, unpack(byTag[tag])) end
end
