-- Frees a key of one kind whoever holds it (an operator's forced release) and tells its waiters as a release does.
-- Runs after fencing.lua, notices.lua and holders.lua. A fair key's queue stays: its head takes the key next.
-- The fencing counter is kept: the next token is still larger than every earlier one (fencing.lua). A removed
-- exclusive, fair or write holder's own release finds the key free without a record of its own release
-- (release.lua), so it is told its lease was lost rather than that it had released already; its token, if it
-- asks for one now, is refused (issue_token.lua).
-- KEYS[1] the kind's lease key (holders.lua), KEYS[2] the key's release notice channel (one hash tag)
-- ARGV[1] 'owner' or 'set' (holders.lua), ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both'
-- Returns the holders removed, as holders.lua answers them.
local removed = liveHolders(KEYS[1], ARGV[1])
if redis.call('DEL', KEYS[1]) == 1 then
  publishRelease(KEYS[2], ARGV[2])
end
return removed
