-- Takes the read side of a key's read/write lock for an owner, or reports how long to wait.
-- KEYS[1] writer key, KEYS[2] readers set (owner -> expiry in server ms), KEYS[3] writer-waiting intent,
-- KEYS[4] fencing counter (one hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms
-- Returns {1, token} when the owner reads now, {0, ms} while a writer holds the key or waits for it.
local micros, now = serverTime()
purgeExpired(KEYS[2], now)
-- Already a reader: a client retry after a lost reply runs this twice for one acquisition.
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  local writerTtl = redis.call('PTTL', KEYS[1])
  if writerTtl > 0 then
    return {0, writerTtl}
  end
  -- A waiting writer stops new readers, or a steady stream of readers would starve it.
  local intentTtl = redis.call('PTTL', KEYS[3])
  if intentTtl > 0 then
    return {0, intentTtl}
  end
end
return {1, grantShare(KEYS[2], ARGV[1], ARGV[2], KEYS[4], ARGV[3], micros, now)}
