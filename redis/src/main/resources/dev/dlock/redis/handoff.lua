-- Passes the owner's exclusive lease to the next holder in its JVM: the key stays the owner's, and a new
-- fencing token is issued by the rule of acquire.lua (nextToken of the prelude), so the next holder's token
-- is above every earlier one.
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, or '0' to keep the key's expiry, ARGV[3] counter TTL in ms
-- Returns the new token, or -1 when the owner no longer holds the key (nothing is changed then).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
if ARGV[2] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local micros = serverTime()
return nextToken(KEYS[2], ARGV[3], micros)
