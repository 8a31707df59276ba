-- Takes the write side of a key's read/write lock for an owner, or reports how long to wait; a writer
-- refused only because of readers leaves an intent that stops new readers until it takes the key.
-- KEYS[1] writer key, KEYS[2] readers set (owner -> expiry in server ms), KEYS[3] writer-waiting intent,
-- KEYS[4] fencing counter (one hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms, ARGV[4] intent lifetime in ms
-- Returns {1, token} when the owner writes now, {0, ms} when it must ask again within that time.
local micros, now = serverTime()
purgeExpired(KEYS[2], now)
local writer = redis.call('GET', KEYS[1])
if writer and writer ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1])}
end
local readersLeft = earliestExpiry(KEYS[2], now)
if not writer and readersLeft then
  local intent = redis.call('GET', KEYS[3])
  if not intent or intent == ARGV[1] then
    redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[4])
  end
  -- Back before the intent runs out, or it lapses and readers slip in again.
  return {0, math.max(1, math.min(readersLeft, math.floor(tonumber(ARGV[4]) / 3)))}
end
-- Free, or already ours (a client retry after a lost reply): take or extend it.
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[3]) == ARGV[1] then
  redis.call('DEL', KEYS[3])
end
return {1, nextToken(KEYS[4], ARGV[3], micros)}
