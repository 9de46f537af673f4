--[[
  Caches a user's counters (the user's packed counters) unless the cache already holds a newer version:
  two writers racing with rows of different versions leave the newer one. A user whose
  cached values changed is queued for the next live push (lua/publishUserCounts-1.lua); a
  first write to an empty cache is queued only when it comes from a change (ARGV[9]), not
  when a read fills the cache.

  Input:
    KEYS[1] user packed counters        ucnt:{uN}:v1:<user>
    KEYS[2] its version     ucntv:{uN}:<user>
    KEYS[3] push queue      pushq:{uN}
    ARGV[1] version of the row (0: a user with no row yet, all zeros)   ARGV[2..6] followings, followers, posts, likesReceived, favsReceived
    ARGV[7] '1' to also overwrite a cache at the same version (repairing a corrupt value)
    ARGV[8] the user's id (queued when the values changed)
    ARGV[9] '1' when the row comes from a change (a like, a follow, a post), not a read

  Output: 1 written, 0 the cache was newer
]]
--- @include "includes/packedCounters"

local version = tonumber(ARGV[1])
if not version then return -2 end
local cached = redis.call('GET', KEYS[2])
if cached then
  local at = tonumber(cached)
  if at > version or (at == version and ARGV[7] ~= '1') then return 0 end
end
local v = {}
for i = 1, 5 do v[i] = clampCount(tonumber(ARGV[i + 1]) or 0) end
local encoded = packCounters(v)
local current = redis.call('GET', KEYS[1])
if current ~= encoded then
  redis.call('SET', KEYS[1], encoded)
  if current or ARGV[9] == '1' then redis.call('SADD', KEYS[3], ARGV[8]) end
end
redis.call('SET', KEYS[2], version)
return 1
