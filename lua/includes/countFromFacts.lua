-- Counts as the facts say, for entities whose relations are stored by includes/relationSet.
-- Needs includes: relationSet.
--- @include "includes/relationSpec"

-- An entity's counters rebuilt from its facts (fields without facts start at 0), every slot
-- up to the relations' last present.
-- `facts` = { prefix = key prefix, tag = partition tag "{pN}" }; `entity` = "<type>:<id>".
local function countersFromFacts(facts, entity, relations)
  local v = { 0, 0, 0, 0, 0 }
  for _, relation in ipairs(relations) do
    for slot = #v + 1, relation[2] + 1 do v[slot] = 0 end
  end
  for _, relation in ipairs(relations) do
    v[relation[2] + 1] = countMembers(relationKeys(facts.prefix, facts.tag, relation[1] .. ':' .. entity))
  end
  return v
end
