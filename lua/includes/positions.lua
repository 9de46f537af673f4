-- Log positions are "<ms>-<seq>": outbox stream ids (Kafka messages carry them too).
-- Returns -1, 0 or 1; a missing position (nil or false) sorts before every position.
local function comparePositions(a, b)
  if not a and not b then return 0 end
  if not a then return -1 end
  if not b then return 1 end
  local ah, al = string.match(a, '^(%d+)-(%d+)$')
  local bh, bl = string.match(b, '^(%d+)-(%d+)$')
  ah, al, bh, bl = tonumber(ah), tonumber(al), tonumber(bh), tonumber(bl)
  if ah ~= bh then return ah < bh and -1 or 1 end
  if al ~= bl then return al < bl and -1 or 1 end
  return 0
end

local function isPosition(text)
  return type(text) == 'string' and string.match(text, '^%d+%-%d+$') ~= nil
end
