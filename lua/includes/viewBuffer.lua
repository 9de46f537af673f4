-- The partitions' buffers of views (`vbuf:{pN}`, lists of "<type>:<id> <digest>", digest '-'
-- for a view counted in `total` only): the next flush adds a buffer up per entity before it
-- folds (lua/foldViews-3.lua), so a view costs one list element and no event.
--- @include "includes/keyNames"

-- Whether `digest` is one a sketch takes: '' (none) or a decimal integer below 2^48, written
-- as lua/includes/viewerSketch.lua writes one (no leading zero): a HyperLogLog is fed the text.
local function validDigest(digest)
  return digest == '' or digest == '0' or (string.match(digest, '^[1-9]%d*$') ~= nil and #digest <= 15 and tonumber(digest) < 2 ^ 48)
end

-- A view as its buffer holds it, after `suffix`: " <digest>", or " -" for a view counted in
-- `total` only.
local function viewSuffix(digest) return ' ' .. (digest == '' and '-' or digest) end

-- Appends `elements[i]` ("<type>:<id> <digest>") to the buffer of partition `tags[i]` ("{pN}"):
-- one RPUSH per partition.
local function bufferViews(prefix, tags, elements)
  local byTag, order = {}, {}
  for i, tag in ipairs(tags) do
    local buffered = byTag[tag]
    if not buffered then
      buffered = {}
      byTag[tag] = buffered
      order[#order + 1] = tag
    end
    buffered[#buffered + 1] = elements[i]
  end
  for _, tag in ipairs(order) do redis.call('RPUSH', prefix .. KEY.viewBuffer .. tag, unpack(byTag[tag])) end
end
