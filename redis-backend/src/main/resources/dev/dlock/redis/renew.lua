-- Extends every lease of the batch whose owner still matches.
-- KEYS[i] lock key i (all in one slot)
-- ARGV[2i-1] owner token of key i, ARGV[2i] new lease of key i in ms
-- Returns one entry per key: 1 renewed, 0 key missing (expired), -1 held by another owner.
local results = {}
for i = 1, #KEYS do
  local current = redis.call('GET', KEYS[i])
  -- The owner's value, or it marked by a refused waiter (notices.lua); the mark is kept.
  if heldBy(current, ARGV[2 * i - 1]) then
    redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
    results[i] = 1
  elseif current then
    results[i] = -1
  else
    results[i] = 0
  end
end
return results
