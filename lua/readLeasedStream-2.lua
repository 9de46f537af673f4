--[[
  Reads a partition's stream for a consumer group, but only for the member holding the
  partition's lease. A member that lost its lease (its heartbeat failed while Redis timed out)
  still runs its loop until it notices; were it to read new entries, they would be its own
  pending entries, never handed to the new owner, which would read past them: two members
  would then apply or relay one partition's events out of order. Checked in the same step as
  the read, nothing can be taken between the check and the read.

  Input:
    KEYS[1] lease key   lease:{pN}:<group>
    KEYS[2] stream      outbox:{pN}

    ARGV[1] member id (the lease's holder, and the group's consumer name)
    ARGV[2] group
    ARGV[3] 'claim' (the pending entries, from ARGV[5]) or 'new' (entries never delivered)
    ARGV[4] most entries
    ARGV[5] claim cursor (for 'claim')

  Output:
    0                               not the lease's holder: nothing read
    { 1, next, entries, deleted }   'claim': as XAUTOCLAIM (next is '0-0' when every pending entry was seen)
    { 2, entries }                  'new': as XREADGROUP's entries (empty when none)
    -2                              invalid arguments
]]
local rcall = redis.call
local member, group, mode, count = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if member == '' or not count or count < 1 then return -2 end
if rcall('GET', KEYS[1]) ~= member then return 0 end

if mode == 'claim' then
  local reply = rcall('XAUTOCLAIM', KEYS[2], group, member, 0, ARGV[5], 'COUNT', count)
  return { 1, reply[1], reply[2], reply[3] or {} }
elseif mode == 'new' then
  local reply = rcall('XREADGROUP', 'GROUP', group, member, 'COUNT', count, 'STREAMS', KEYS[2], '>')
  if not reply then return { 2, {} } end
  return { 2, reply[1][2] }
end
return -2
