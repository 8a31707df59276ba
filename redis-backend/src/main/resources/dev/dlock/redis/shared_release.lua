-- Gives back an owner's read lease or permit, and tells waiters.
-- A release leaves a record of itself, as release.lua does, but one per releasing owner, since many sharers of a key
-- release at once: a sorted set of the owners released lately (owner -> when its record lapses, server ms), purged
-- on every release and bounded, the oldest records dropped first. Owner tokens are unique per acquisition, so a later
-- release by the same owner that finds it no holder and the record naming it is this release repeated (its reply was
-- lost, or the client retried); any other non-holder lost its share (it ran out, or a restart, a failover to a
-- replica that missed it, or a forced release dropped it), whether or not a writer took the key since.
-- KEYS[1] the readers or permits set (owner -> expiry in server ms), KEYS[2] release notice channel, KEYS[3] the record
-- of the set's recent releases (one hash tag: a cluster script declares every key it touches)
-- ARGV[1] owner token, ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both' (notices.lua), ARGV[3] how
-- long a record of a release lives, in ms, ARGV[4] the most records kept
-- Returns 1 released now, 2 already released by this owner's own release (a repeat), 0 not a holder otherwise (lost).
local micros, now = serverTime()
purgeExpired(KEYS[1], now)
purgeExpired(KEYS[3], now)
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[3], int(now + tonumber(ARGV[3])), ARGV[1])
  -- Past the bound the oldest records go: their repeats, long due, would read as lost, never a loss as released.
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(tonumber(ARGV[4]) + 1))
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  publishRelease(KEYS[2], ARGV[2])
  return 1
end
if redis.call('ZSCORE', KEYS[3], ARGV[1]) then
  return 2
end
return 0
