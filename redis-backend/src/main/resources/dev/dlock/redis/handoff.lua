-- Passes the owner's exclusive lease to the next holder in its JVM: the key stays the owner's, and a new
-- fencing token is issued by the rule of fencing.lua, so the next holder's token is above every earlier one.
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, or '0' to keep the key's expiry, ARGV[3] counter TTL in ms
-- Returns {token, 1 when another owner was refused the key since it was taken (the mark of notices.lua, kept
-- here), else 0}, or -1 when the owner no longer holds the key (nothing is changed then).
local held, waited = heldBy(redis.call('GET', KEYS[1]), ARGV[1])
if not held then
  return -1
end
if ARGV[2] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {nextToken(KEYS[2], ARGV[3], serverTime()), waited and 1 or 0}
