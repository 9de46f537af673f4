--[[
  Records a viewer's views on a single Redis, in one step: the views budget, when the caller
  did not take it before (includes/tokenBucket, all or nothing), then which of these entities
  count a view now by the viewer's window (includes/viewWindow), and those appended to their
  partitions' buffers (includes/viewBuffer). A Cluster keeps the window and the buffers in
  different slots, so there lua/claimViews-1.lua and lua/addViews-1.lua take the two steps.

  Input:
    KEYS[1] the viewer's window   vw:{uN}:<id> or vwa:<address digest>
    KEYS[2] buffer of the first entity's partition   vbuf:{pN}
    KEYS[3] the viewer's views budget   rl:{uN}:views:<id> or rlip:views:<address>
    ARGV[1] window ms   ARGV[2] key prefix
    ARGV[3] the viewer's digest (a decimal integer below 2^48), or '' for views counted in `total` only
    ARGV[4] the budget's capacity, 0 when it was taken before   ARGV[5] its window (ms)
    ARGV[6] tokens to take (1..capacity)
    ARGV[7..] the entities' names "<type>:<id>" (n of them, distinct, none is fine), then their
            partition tags "{pN}", in the same order

  Output: { 0, then per entity 1 when its view counted now, else 0 }, or { ms until the budget
  has the tokens } when it refused them (nothing recorded); -2 for invalid arguments
]]
--- @include "includes/clock"
--- @include "includes/tokenBucket"
--- @include "includes/viewWindow"
--- @include "includes/viewBuffer"
local FIRST = 7
local windowMs, prefix, digest = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local capacity, budgetMs, wanted = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
if not windowMs or windowMs < 1 or not validDigest(digest) or (#ARGV - FIRST + 1) % 2 ~= 0 then return -2 end
if not capacity or capacity < 0 or (capacity > 0 and (not budgetMs or budgetMs < 1 or not wanted or wanted < 1 or wanted > capacity)) then
  return -2
end

local now = nowMs()
if capacity > 0 then
  local granted, waitMs = takeTokens(KEYS[3], capacity, budgetMs, wanted, true, now)
  if granted == 0 then return { waitMs } end
end
local n = (#ARGV - FIRST + 1) / 2
if n == 0 then return { 0 } end
local counted = claimInWindow(KEYS[1], windowMs, FIRST, n, now)
local tags, elements, suffix = {}, {}, viewSuffix(digest)
for i = 1, n do
  if counted[i] == 1 then
    tags[#tags + 1] = ARGV[FIRST - 1 + n + i]
    elements[#elements + 1] = ARGV[FIRST - 1 + i] .. suffix
  end
end
if #tags > 0 then bufferViews(prefix, tags, elements) end
table.insert(counted, 1, 0)
return counted
