-- Takes the lock for an owner and issues a fencing token; reports the remaining TTL when held by another.
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms
-- Returns {1, token} when the owner holds the key now, {0, PTTL} when another owner holds it.
-- A refused attempt marks the holder's value (owner .. '+waited'): only a marked release publishes a notice, and
-- a marked hand-off tells the holder's JVM that others wait. No wake-up is lost: a waiter subscribes before it
-- asks again, and the mark is set in the same script that refuses it, so every release after that publishes. A mark
-- a failover lost (replication is asynchronous) is set again by the waiter's next question, at most a second later.

-- Every token is max(counter + 1, server time in microseconds), written back. The clock term keeps
-- tokens increasing where the counter alone cannot: a counter that expired, or a promoted replica
-- whose counter is stale because it missed the last acquisitions on the old master.
local function nextToken()
  local now = redis.call('TIME')
  local micros = tonumber(now[1]) * 1000000 + tonumber(now[2])
  -- Tokens stay below 2^53, exact in a Lua number; '%.0f' because tostring would print 1.7e+15.
  -- SET ... GET writes the clock term and reads the old counter in one command; only when the counter is
  -- not behind the clock (acquisitions faster than one per microsecond, or a clock set back) is it rewritten.
  local token = string.format('%.0f', micros)
  local previous = tonumber(redis.call('SET', KEYS[2], token, 'PX', ARGV[3], 'GET') or '0')
  if previous >= micros then
    token = string.format('%.0f', previous + 1)
    redis.call('SET', KEYS[2], token, 'PX', ARGV[3])
  end
  return token
end

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, nextToken()}
end
local current = redis.call('GET', KEYS[1])
local marked = ARGV[1] .. '+waited'
-- Already ours: a client retry after a lost reply runs this script twice for one acquisition.
if current == ARGV[1] or current == marked then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, nextToken()}
end
if current and string.sub(current, -7) ~= '+waited' then
  redis.call('SET', KEYS[1], current .. '+waited', 'KEEPTTL')
end
return {0, redis.call('PTTL', KEYS[1])}
