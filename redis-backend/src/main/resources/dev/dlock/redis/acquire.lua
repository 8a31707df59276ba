-- Takes the lock for an owner and issues a fencing token; reports the remaining TTL when held by another.
-- Runs after fencing.lua and notices.lua (the token and the mark of a refused attempt).
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms
-- Returns {1, token} when the owner holds the key now, {0, PTTL} when another owner holds it.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, nextToken(KEYS[2], ARGV[3], serverTime())}
end
local current = redis.call('GET', KEYS[1])
-- Already ours: a client retry after a lost reply runs this script twice for one acquisition.
if heldBy(current, ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, nextToken(KEYS[2], ARGV[3], serverTime())}
end
markWaited(KEYS[1], current)
return {0, redis.call('PTTL', KEYS[1])}
