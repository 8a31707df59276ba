-- Passes the owner's exclusive lease to the next holder in its JVM: the key stays taken, now by the next holder's
-- own owner token, so that every owner-checked command still on its way for the previous holder (a late renewal,
-- release or token issuance) misses. A next holder that reads its fencing token gets it here (KEYS[2] given), by the
-- rule of fencing.lua and only after the owner check; any other asks for its own when it needs one
-- (issue_token.lua). Either token is above every earlier one, since holding periods never overlap.
-- Runs after fencing.lua and notices.lua.
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash tag), only to issue the next holder's token now
-- ARGV[1] owner token, ARGV[2] the next holder's owner token, ARGV[3] lease in ms, or '0' to keep the key's expiry,
-- ARGV[4] counter TTL in ms (with KEYS[2])
-- Returns {1, token} when another owner was refused the key since it was taken (the mark of notices.lua, carried to the
-- next owner), {0, token} when not; token 0 when none was issued. {-1, 0} when the owner no longer holds the key
-- (nothing is changed or issued then). A key the next owner holds already is this hand-off run again (a client retry
-- after a lost reply): same answer without a token, nothing changed.
local current = redis.call('GET', KEYS[1])
local passed, passedMarked = heldBy(current, ARGV[2])
if passed then
  return {passedMarked and 1 or 0, 0}
end
local held, waited = heldBy(current, ARGV[1])
if not held then
  return {-1, 0}
end
local value = ARGV[2]
if waited then
  value = value .. WAITED
end
if ARGV[3] ~= '0' then
  redis.call('SET', KEYS[1], value, 'PX', ARGV[3])
else
  redis.call('SET', KEYS[1], value, 'KEEPTTL')
end
local token = 0
if KEYS[2] then
  token = nextToken(KEYS[2], ARGV[4], serverTime())
end
return {waited and 1 or 0, token}
