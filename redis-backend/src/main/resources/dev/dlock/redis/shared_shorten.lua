-- A new term of a live read lease or permit, as a member under a new owner token, so that no command still on its way
-- for the owner (a late renewal, a release) can change it again: a release before lockAtLeastFor ran out keeps the
-- share for what is left under a retired owner token that nobody holds (it then lapses like any expired member); an
-- extension gives the holder's share a new term of its own.
-- KEYS[1] the readers or permits set (owner -> expiry in server ms)
-- ARGV[1] owner token, ARGV[2] the new term's owner token, ARGV[3] the new term, in ms
-- Returns 1 done (also when the new owner is a member already: this ran before), 0 not a holder.
local micros, now = serverTime()
purgeExpired(KEYS[1], now)
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 1
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('ZADD', KEYS[1], int(now + tonumber(ARGV[3])), ARGV[2])
  expireWithLatest(KEYS[1], now)
  return 1
end
return 0
