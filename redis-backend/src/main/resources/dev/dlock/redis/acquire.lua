-- Takes the lock for an owner and issues a fencing token; reports the remaining TTL when held.
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local token = redis.call('INCR', KEYS[2])
  if token == 1 then
    -- The counter was absent or expired: restart it at the server clock in microseconds, which is
    -- above every token issued before as long as a key sees fewer acquisitions than microseconds pass.
    -- Built as a string because Lua 5.1 may print large numbers in exponent notation.
    local now = redis.call('TIME')
    local micros = now[1] .. string.format('%06d', tonumber(now[2]))
    redis.call('SET', KEYS[2], micros, 'PX', ARGV[3])
    return {1, micros}
  end
  return {1, token}
end
return {0, redis.call('PTTL', KEYS[1])}
