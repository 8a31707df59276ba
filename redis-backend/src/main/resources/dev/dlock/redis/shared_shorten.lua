-- A release of a read lease or permit before lockAtLeastFor ran out: the share stays taken for what is left, as a
-- member under a retired owner token that nobody holds, so that no command still on its way for the owner (a late
-- renewal) can extend it again; it then lapses like any expired member.
-- KEYS[1] the readers or permits set (owner -> expiry in server ms)
-- ARGV[1] owner token, ARGV[2] retired owner token, ARGV[3] what is left, in ms
-- Returns 1 done (also when the retired owner is a member already: this ran before), 0 not a holder.
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
