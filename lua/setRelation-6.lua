--[[
  Sets one user's relation fact to the desired absolute state and, only if it really
  changed, appends the counter event to the partition's outbox. One atomic step: there is
  never a fact without its event, nor an event without its fact. A retry can never undo a
  like because the caller states the result it wants, not a toggle.

  Input:
    KEYS[1] bitmap chunk index  bmi:{pN}:<relation>:<type>:<id>   (the relation's set; see
    KEYS[2] array block index   rai:{pN}:<relation>:<type>:<id>    includes/relationSet)
    KEYS[3] outbox stream       ob:{pN}
    KEYS[4] idempotency record  idem:{pN}:<user>:<key digest>   (untouched when ARGV[4] is '')
    KEYS[5] partition ready     ready:{pN}      (see includes/readiness.lua)
    KEYS[6] entities restored   restored:{pN}

    ARGV[1] partition tag "{pN}"   ARGV[2] desired state (0 or 1)   ARGV[3] key prefix
    ARGV[4] request fingerprint, '' when the request has no idempotency key
    ARGV[5] idempotency record TTL (seconds)
    ARGV[6] entity type     ARGV[7] entity id    ARGV[8] relation   ARGV[9] counter slot
    ARGV[10] user id (a safe integer)   ARGV[11] author id
    ARGV[12] not after: epoch ms (Redis's clock) past which the call is refused, 0 for never.
             A call its client gave up on (timed out) may still be queued in the client; it
             must not land later, behind the client's back.
    ARGV[13] the relations exclusive with ARGV[8] ("r_laugh:7,r_eyes:12", '' for none): setting
             ARGV[8] removes the user from each of them first, each removal with its event.
    ARGV[14] every reaction, with its slot: the relations kept in the entity's reaction index
             (includes/reactionIndex)

  Output:
    { 1, changed, eventId }  applied (eventId, of the last event appended, is '' when nothing changed)
    { 2, changed, '' }       replayed: the key was used before for this same request
    -1                       the key was used before for a different request (nothing changed)
    -2                       invalid arguments (nothing changed)
    -3                       Redis does not hold this entity's facts yet (lost, not yet
                             restored from PostgreSQL): nothing changed, nothing decided
    -4                       arrived after ARGV[12]: nothing changed
]]
--- @include "includes/relationSet"
--- @include "includes/relationSpec"
--- @include "includes/reactionIndex"
local rcall = redis.call

local userId = tonumber(ARGV[10])
local desired = tonumber(ARGV[2])
local fingerprint = ARGV[4]
local ttl = tonumber(ARGV[5])
local notAfter = tonumber(ARGV[12])
if not userId or userId < 0 or userId > 9007199254740991 or userId % 1 ~= 0 or (desired ~= 0 and desired ~= 1)
  or not ttl or ttl <= 0 or string.find(fingerprint, '|', 1, true) or not notAfter then
  return -2
end

if notAfter > 0 then
  local time = rcall('TIME')
  if tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000) > notAfter then return -4 end
end

-- Decide nothing against facts Redis does not hold (see includes/readiness.lua).
if rcall('EXISTS', KEYS[5]) == 0 and rcall('SISMEMBER', KEYS[6], ARGV[6] .. ':' .. ARGV[7]) == 0 then return -3 end

if fingerprint ~= '' then
  local first = rcall('GET', KEYS[4])
  if first then
    local firstFingerprint, firstChanged = string.match(first, '^(.*)|(%d)$')
    if firstFingerprint ~= fingerprint then return -1 end
    return { 2, tonumber(firstChanged), '' }
  end
end

local reactions = parseRelations(ARGV[14] or '')
local entity = ARGV[6] .. ':' .. ARGV[7]
local changed = 0
local eventId = ''
local function record(relation, slot, member)
  local facts = relationKeys(ARGV[3], ARGV[1], relation .. ':' .. entity)
  if not setMember(facts, userId, member) then return end
  indexIfReaction(ARGV[3], ARGV[1], entity, reactions, relation, userId, member)
  changed = 1
  eventId = rcall('XADD', KEYS[3], '*',
    'e', ARGV[6], 'i', ARGV[7], 'm', relation, 'x', slot,
    'u', ARGV[10], 'a', ARGV[11], 'd', member and '1' or '-1')
end
if desired == 1 then
  for _, exclusive in ipairs(parseRelations(ARGV[13] or '')) do record(exclusive[1], exclusive[2], false) end
end
record(ARGV[8], ARGV[9], desired == 1)

if fingerprint ~= '' then
  rcall('SET', KEYS[4], fingerprint .. '|' .. changed, 'EX', ttl)
end
return { 1, changed, eventId }
