--[[
  Token bucket (includes/tokenBucket): takes up to ARGV[3] tokens from a bucket. What is
  granted is taken; the rest is refused (a request's list pages share one call: the first ones
  run, the others wait). All or nothing (a request's cost): either every token wanted is
  taken, or none.

  Input:
    KEYS[1] the bucket   rl:{uN}:<budget>:<user> or rlip:<budget>:<address>  (hash: tokens, at)
    ARGV[1] capacity     ARGV[2] window (ms)     ARGV[3] tokens wanted (>= 1)
    ARGV[4] "all" for all or nothing (wanted <= capacity), anything else for as many as there are

  Output: { granted, tokens left } when all were granted, { granted, ms until one more
  token (all or nothing: until `wanted` tokens) } otherwise; -2 for invalid arguments
]]
--- @include "includes/clock"
--- @include "includes/tokenBucket"
local capacity, window, wanted = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local allOrNothing = ARGV[4] == 'all'
if not capacity or capacity < 1 or not window or window < 1 or not wanted or wanted < 1 then return -2 end
if allOrNothing and wanted > capacity then return -2 end

return { takeTokens(KEYS[1], capacity, window, wanted, allOrNothing, nowMs()) }
