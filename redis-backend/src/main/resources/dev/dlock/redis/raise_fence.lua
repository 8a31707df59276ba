-- Raises a fencing counter to at least a token issued elsewhere (Redlock), never lowering it; the counter keeps
-- the counter TTL of fencing.lua's rule. Only Redlock raises, so this rule lives here rather than in a prelude
-- every acquisition would pay for (each prelude function is a closure built on every call).
-- KEYS[1] fencing counter
-- ARGV[1] token, ARGV[2] counter TTL in ms
-- Compared as numbers: tokens stay below 2^53 (microseconds since 1970 plus acquisitions), exact in Lua.
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
