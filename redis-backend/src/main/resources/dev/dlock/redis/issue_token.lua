-- Issues a lock's fencing token when its holder first asks for it (the acquisition issued none): by the rule of
-- fencing.lua, and only while the owner holds the lock key (marked by a waiter or not, notices.lua). Holding periods
-- of one key never overlap and a non-owner is refused, so the token is larger than every token of every earlier
-- holder, and a holder whose lease was lost gets none.
-- KEYS[1] the kind's lock key (owner shape), KEYS[2] fencing counter (one hash tag)
-- ARGV[1] owner token, ARGV[2] counter TTL in ms
-- Returns the token, or -1 when the owner does not hold the key (nothing is written then).
if not heldBy(redis.call('GET', KEYS[1]), ARGV[1]) then
  return -1
end
return nextToken(KEYS[2], ARGV[2], serverTime())
