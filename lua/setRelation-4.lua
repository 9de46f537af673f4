--[[
  Sets one user's relation bit to the desired absolute state and, only if the bit really
  changed, appends the counter event to the partition's outbox. One atomic step: there is
  never a fact without its event, nor an event without its fact. A retry can never undo a
  like because the caller states the result it wants, not a toggle.

  Input:
    KEYS[1] bitmap chunk        bm:{pN}:<metric>:<type>:<id>:<chunk>
    KEYS[2] chunk index         bmi:{pN}:<metric>:<type>:<id>
    KEYS[3] outbox stream       ob:{pN}
    KEYS[4] idempotency record  idem:{pN}:<user>:<key>   (untouched when ARGV[4] is '')

    ARGV[1] bit offset within the chunk (0..32767)
    ARGV[2] desired state (0 or 1)
    ARGV[3] chunk number
    ARGV[4] request fingerprint, '' when the request has no idempotency key
    ARGV[5] idempotency record TTL (seconds)
    ARGV[6] entity type     ARGV[7] entity id    ARGV[8] metric   ARGV[9] SDS index
    ARGV[10] user id        ARGV[11] author id

  Output:
    { 1, changed, eventId }  applied (eventId is '' when nothing changed)
    { 2, changed, '' }       replayed: the key was used before for this same request
    -1                       the key was used before for a different request (nothing changed)
    -2                       invalid arguments (nothing changed)
]]
local rcall = redis.call

local bit = tonumber(ARGV[1])
local desired = tonumber(ARGV[2])
local fingerprint = ARGV[4]
local ttl = tonumber(ARGV[5])
if not bit or bit < 0 or bit > 32767 or (desired ~= 0 and desired ~= 1) or not tonumber(ARGV[3])
  or not ttl or ttl <= 0 or string.find(fingerprint, '|', 1, true) then
  return -2
end

if fingerprint ~= '' then
  local first = rcall('GET', KEYS[4])
  if first then
    local firstFingerprint, firstChanged = string.match(first, '^(.*)|(%d)$')
    if firstFingerprint ~= fingerprint then return -1 end
    return { 2, tonumber(firstChanged), '' }
  end
end

-- GETBIT first: SETBIT 0 on a missing chunk would allocate it just to store nothing.
local changed = 0
local eventId = ''
if rcall('GETBIT', KEYS[1], bit) ~= desired then
  rcall('SETBIT', KEYS[1], bit, desired)
  if desired == 1 then rcall('SADD', KEYS[2], ARGV[3]) end
  changed = 1
  eventId = rcall('XADD', KEYS[3], '*',
    'e', ARGV[6], 'i', ARGV[7], 'm', ARGV[8], 'x', ARGV[9],
    'u', ARGV[10], 'a', ARGV[11], 'd', desired == 1 and '1' or '-1')
end

if fingerprint ~= '' then
  rcall('SET', KEYS[4], fingerprint .. '|' .. changed, 'EX', ttl)
end
return { 1, changed, eventId }
