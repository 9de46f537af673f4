-- Token buckets (src/limits/rateLimiter.ts): a bucket holds at most `capacity` tokens and
-- refills continuously, `capacity` per `window` ms, so a burst of `capacity` is fine and the
-- long-run rate is capacity / window. The bucket is a hash (tokens, at) that expires after
-- two windows untouched.

-- Takes up to `wanted` tokens at `now` (epoch ms); with `allOrNothing`, all of them or none.
-- Returns how many were granted, then the tokens left when all were granted, else the ms until
-- one more token (all or nothing: until `wanted` tokens).
local function takeTokens(bucket, capacity, window, wanted, allOrNothing, now)
  local state = redis.call('HMGET', bucket, 'tokens', 'at')
  local tokens = tonumber(state[1]) or capacity
  local at = tonumber(state[2]) or now
  tokens = math.min(capacity, tokens + (now - at) * capacity / window)

  local granted = math.min(wanted, math.floor(tokens))
  if allOrNothing and granted < wanted then granted = 0 end
  tokens = tokens - granted
  redis.call('HSET', bucket, 'tokens', tokens, 'at', now)
  redis.call('PEXPIRE', bucket, window * 2)
  if granted == wanted then return granted, math.floor(tokens) end
  local missing = (allOrNothing and wanted or 1) - tokens
  return granted, math.ceil(missing * window / capacity)
end
