-- Passes the owner's exclusive lease to the next holder in its JVM: the key stays the owner's. No fencing token is
-- issued here: the next holder asks for its own when it needs one (issue_token.lua), which is then above every
-- earlier token, since holding periods of the key never overlap.
-- KEYS[1] lock key
-- ARGV[1] owner token, ARGV[2] lease in ms, or '0' to keep the key's expiry
-- Returns 1 when another owner was refused the key since it was taken (the mark of notices.lua, kept here), 0 when
-- not, or -1 when the owner no longer holds the key (nothing is changed then).
local held, waited = heldBy(redis.call('GET', KEYS[1]), ARGV[1])
if not held then
  return -1
end
if ARGV[2] ~= '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return waited and 1 or 0
