-- Counts as the facts say, for entities whose relations are stored by includes/relationSet.
-- Needs includes: relationSet.

-- "like:1,fav:2" -> { {'like', 1}, {'fav', 2} }: fact-backed metrics and their SDS index.
local function parseMetrics(spec)
  local metrics = {}
  for name, idx in string.gmatch(spec, '(%w+):(%d)') do
    metrics[#metrics + 1] = { name, tonumber(idx) }
  end
  return metrics
end

-- An entity's counters rebuilt from its facts (fields without facts start at 0).
-- `facts` = { prefix = key prefix, tag = partition tag "{pN}" }; `entity` = "<type>:<id>".
local function sdsFromFacts(facts, entity, metrics)
  local v = { 0, 0, 0, 0, 0 }
  for _, metric in ipairs(metrics) do
    v[metric[2] + 1] = countMembers(relationKeys(facts.prefix, facts.tag, metric[1] .. ':' .. entity))
  end
  return v
end
