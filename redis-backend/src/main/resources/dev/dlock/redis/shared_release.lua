-- Gives back an owner's read lease or permit, and tells waiters.
-- KEYS[1] the readers or permits set (owner -> expiry in server ms), KEYS[2] release notice channel (one hash tag)
-- ARGV[1] owner token, ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both' (notices.lua)
-- Returns 1 released now, 2 not a holder (already released, or expired: the caller's lease clock tells which).
local micros, now = serverTime()
purgeExpired(KEYS[1], now)
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  publishRelease(KEYS[2], ARGV[2])
  return 1
end
return 2
