-- The relations a caller names, with their counter slots (the registry, src/domain/relations.ts).
-- "like:1,fav:2" -> { {'like', 1}, {'fav', 2} }: fact-backed relations and their counter slot.
local function parseRelations(spec)
  local relations = {}
  for name, slot in string.gmatch(spec, '([%w_]+):(%d+)') do
    relations[#relations + 1] = { name, tonumber(slot) }
  end
  return relations
end
