-- MGET of any number of keys: Lua's unpack takes at most ~8,000 values, and a request's
-- viewer state may name more (entities × relations × 3 keys), so larger lists go in slices.
local MGET_SLICE = 4000
local function mgetMany(names)
  if #names <= MGET_SLICE then return redis.call('MGET', unpack(names)) end
  local values = {}
  for first = 1, #names, MGET_SLICE do
    local slice = redis.call('MGET', unpack(names, first, math.min(first + MGET_SLICE - 1, #names)))
    for i = 1, #slice do values[first + i - 1] = slice[i] end
  end
  return values
end
