-- Frees a key of one kind whoever holds it (an operator's forced release) and tells its waiters as a release does.
-- Runs after fencing.lua, notices.lua and holders.lua. A fair key's queue stays: its head takes the key next.
-- The fencing counter is kept, one higher when it exists: the next token is still larger than every earlier one,
-- and the removed holder's own release no longer finds the counter at its token, so it is told its lease was lost
-- rather than that it had released already (release.lua's repeated-release answer).
-- KEYS[1] the kind's lease key (holders.lua), KEYS[2] the key's release notice channel, KEYS[3] the fencing counter
-- (one hash tag)
-- ARGV[1] 'owner' or 'set' (holders.lua), ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both'
-- Returns the holders removed, as holders.lua answers them.
local removed = liveHolders(KEYS[1], ARGV[1])
if redis.call('DEL', KEYS[1]) == 1 then
  publishRelease(KEYS[2], ARGV[2])
end
if #removed > 0 and redis.call('EXISTS', KEYS[3]) == 1 then
  -- INCR keeps the counter's expiry.
  redis.call('INCR', KEYS[3])
end
return removed
