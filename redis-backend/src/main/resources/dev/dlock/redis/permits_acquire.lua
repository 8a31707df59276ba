-- Takes one of a key's permits for an owner, or reports when the earliest permit frees.
-- KEYS[1] the permits set (owner -> expiry in server ms), KEYS[2] fencing counter, KEYS[3] the number of permits the
-- holders took the key with (one hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms, ARGV[4] number of permits
-- Returns {1, token} when the owner holds a permit now, {0, ms until the earliest permit expires} when none is free,
-- {2, the holders' number} when the key has holders that took it with another number of permits (nothing taken).
local micros, now = serverTime()
purgeExpired(KEYS[1], now)
if redis.call('ZCARD', KEYS[1]) > 0 then
  local held = tonumber(redis.call('GET', KEYS[3]))
  if held and held ~= tonumber(ARGV[4]) then
    return {2, held}
  end
end
-- Already a holder: a client retry after a lost reply runs this twice for one acquisition.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  -- The number lives as long as the counter: a free key takes whatever number its next holder asks for.
  redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[3])
  return {1, grantShare(KEYS[1], ARGV[1], ARGV[2], KEYS[2], ARGV[3], micros, now)}
end
return {0, earliestExpiry(KEYS[1], now)}
