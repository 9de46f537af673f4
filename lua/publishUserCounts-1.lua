--[[
  Pushes the users of one user partition whose counters changed since the last push, with
  their values and the user counters' asOf, on the partition's shard channel (live counts).
  Run once per flush interval, after the asOf is published.

  Input:
    KEYS[1] push queue        pushq:{uN}   (set of user ids)
    ARGV[1] user counters prefix   ucnt:{uN}:v1:
    ARGV[2] shard channel     counts:{uN}
    ARGV[3] asOf (epoch ms) of the user counters

  Output: users pushed
]]
local rcall = redis.call
--- @include "includes/packedCounters"
--- @include "includes/pushCounts"

return pushQueued(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]) or 0)
