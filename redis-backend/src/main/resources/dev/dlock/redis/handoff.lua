-- Passes the owner's exclusive lease to the next holder in its JVM: the key stays taken, now by the next holder's
-- own owner token, so that every owner-checked command still on its way for the previous holder (a late renewal,
-- release or token issuance) misses. No fencing token is issued here: the next holder asks for its own when it
-- needs one (issue_token.lua), which is then above every earlier token, since holding periods never overlap.
-- KEYS[1] lock key
-- ARGV[1] owner token, ARGV[2] the next holder's owner token, ARGV[3] lease in ms, or '0' to keep the key's expiry
-- Returns 1 when another owner was refused the key since it was taken (the mark of notices.lua, carried to the next
-- owner), 0 when not, or -1 when the owner no longer holds the key (nothing is changed then). A key the next owner
-- holds already is this hand-off run again (a client retry after a lost reply): same answer, nothing changed.
local current = redis.call('GET', KEYS[1])
local passed, passedMarked = heldBy(current, ARGV[2])
if passed then
  return passedMarked and 1 or 0
end
local held, waited = heldBy(current, ARGV[1])
if not held then
  return -1
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
return waited and 1 or 0
