-- A waiting writer gives up: its intent stops blocking new readers at once.
-- KEYS[1] writer-waiting intent, KEYS[2] release notice channel (one hash tag)
-- ARGV[1] owner token, ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both' (notices.lua)
-- Returns 1 when the intent was the owner's and is gone, 0 otherwise.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  -- Readers refused because of the intent wait for its end: tell them it ended early.
  publishRelease(KEYS[2], ARGV[2])
  return 1
end
return 0
