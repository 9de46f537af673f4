--[[
  Token bucket: takes one token from a user's bucket if there is one. The bucket holds at
  most `capacity` tokens and refills continuously, `capacity` per `window` ms, so a burst of
  `capacity` changes is fine and the long-run rate is capacity / window.

  Input:
    KEYS[1] the bucket   rl:{uN}:<user>   (hash: tokens, at)
    ARGV[1] capacity     ARGV[2] window (ms)

  Output: { 1, tokens left } taken, or { 0, ms until a token is back } refused
]]
local rcall = redis.call
local capacity, window = tonumber(ARGV[1]), tonumber(ARGV[2])
if not capacity or capacity < 1 or not window or window < 1 then return -2 end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = rcall('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + (now - at) * capacity / window)

local taken = tokens >= 1
if taken then tokens = tokens - 1 end
rcall('HSET', KEYS[1], 'tokens', tokens, 'at', now)
rcall('PEXPIRE', KEYS[1], window * 2)
if taken then return { 1, math.floor(tokens) } end
return { 0, math.ceil((1 - tokens) * window / capacity) }
