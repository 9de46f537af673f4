--[[
  Token bucket: takes up to ARGV[3] tokens from a bucket. The bucket holds at most `capacity`
  tokens and refills continuously, `capacity` per `window` ms, so a burst of `capacity` is
  fine and the long-run rate is capacity / window. What is granted is taken; the rest is
  refused (a request's list pages share one call: the first ones run, the others wait).
  All or nothing (a request's cost): either every token wanted is taken, or none.

  Input:
    KEYS[1] the bucket   rl:{uN}:<budget>:<user> or rlip:<budget>:<address>  (hash: tokens, at)
    ARGV[1] capacity     ARGV[2] window (ms)     ARGV[3] tokens wanted (>= 1)
    ARGV[4] "all" for all or nothing (wanted <= capacity), anything else for as many as there are

  Output: { granted, tokens left } when all were granted, { granted, ms until one more
  token (all or nothing: until `wanted` tokens) } otherwise; -2 for invalid arguments
]]
local rcall = redis.call
local capacity, window, wanted = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local allOrNothing = ARGV[4] == 'all'
if not capacity or capacity < 1 or not window or window < 1 or not wanted or wanted < 1 then return -2 end
if allOrNothing and wanted > capacity then return -2 end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = rcall('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * capacity / window)

local granted = math.min(wanted, math.floor(tokens))
if allOrNothing and granted < wanted then granted = 0 end
tokens = tokens - granted
rcall('HSET', KEYS[1], 'tokens', tokens, 'at', now)
rcall('PEXPIRE', KEYS[1], window * 2)
if granted == wanted then return { granted, math.floor(tokens) } end
local missing = (allOrNothing and wanted or 1) - tokens
return { granted, math.ceil(missing * window / capacity) }
