-- Set bits over every chunk of one entity's relation bitmap: the count as the facts say.
-- Reads only the chunks the index lists, never the whole id space.
local function countChunks(indexKey, chunkKeyPrefix)
  local total = 0
  for _, chunk in ipairs(redis.call('SMEMBERS', indexKey)) do
    total = total + redis.call('BITCOUNT', chunkKeyPrefix .. chunk)
  end
  return total
end

-- "like:1,fav:2" -> { {'like', 1}, {'fav', 2} }: bitmap-backed metrics and their SDS index.
local function parseMetrics(spec)
  local metrics = {}
  for name, idx in string.gmatch(spec, '(%w+):(%d)') do
    metrics[#metrics + 1] = { name, tonumber(idx) }
  end
  return metrics
end

-- An entity's counters rebuilt from its facts (fields without facts start at 0).
local function sdsFromFacts(bitmapPrefix, chunkIndexPrefix, entity, metrics)
  local v = { 0, 0, 0, 0, 0 }
  for _, metric in ipairs(metrics) do
    local base = metric[1] .. ':' .. entity
    v[metric[2] + 1] = countChunks(chunkIndexPrefix .. base, bitmapPrefix .. base .. ':')
  end
  return v
end
