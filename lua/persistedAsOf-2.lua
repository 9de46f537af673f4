--[[
  How far the fact persister has covered one partition: every change acknowledged before the
  returned instant is in PostgreSQL (and so in the user counters).

  Input:
    KEYS[1] newest event id the persister has written   persisted:{pN}
    KEYS[2] outbox stream                               ob:{pN}

  Output: epoch ms
]]
--- @include "includes/positions"
--- @include "includes/outbox"

return coveredUntil(redis.call('GET', KEYS[1]) or false, KEYS[2])
