-- Extends every read lease or permit of the batch whose owner is still a live holder.
-- KEYS[i] the readers or permits set of lease i (all in one slot)
-- ARGV[2i-1] owner token of lease i, ARGV[2i] new lease of i in ms
-- Returns one entry per lease: 1 renewed, 0 not a holder (expired or released).
local micros, now = serverTime()
local results = {}
for i = 1, #KEYS do
  purgeExpired(KEYS[i], now)
  if redis.call('ZSCORE', KEYS[i], ARGV[2 * i - 1]) then
    redis.call('ZADD', KEYS[i], 'XX', int(now + tonumber(ARGV[2 * i])), ARGV[2 * i - 1])
    expireWithLatest(KEYS[i], now)
    results[i] = 1
  else
    results[i] = 0
  end
end
return results
