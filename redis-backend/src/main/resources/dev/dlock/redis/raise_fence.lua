-- Raises a fencing counter to at least a token issued elsewhere (Redlock), never lowering it.
-- KEYS[1] fencing counter
-- ARGV[1] token, ARGV[2] counter TTL in ms
-- Compared as numbers: tokens stay below 2^53 (microseconds since 1970 plus acquisitions), exact in Lua.
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
