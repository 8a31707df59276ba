-- A write that only a holder with a fencing token not below the stored one can make.
-- KEYS[1] the value's key, KEYS[2] the token stored beside it (same slot).
-- ARGV[1] the writer's token, ARGV[2] the command (SET, HSET, RPUSH), ARGV[3] expiry ms (0: keep the
-- value's own), ARGV[4..] the command's arguments after the key.
-- Answers {1, token} when written, {0, stored token} when refused (nothing written).
local stored = redis.call('GET', KEYS[2])
if stored and tonumber(stored) > tonumber(ARGV[1]) then
  return {0, stored}
end
local command = ARGV[2]
if command == 'SET' then
  redis.call('SET', KEYS[1], ARGV[4])
elseif command == 'HSET' then
  redis.call('HSET', KEYS[1], ARGV[4], ARGV[5])
elseif command == 'RPUSH' then
  redis.call('RPUSH', KEYS[1], ARGV[4])
else
  return redis.error_reply('ERR fenced write: unknown command ' .. tostring(command))
end
redis.call('SET', KEYS[2], ARGV[1])
-- The token lives exactly as long as the value: no token key outlives what it guards.
local expiry = tonumber(ARGV[3])
if expiry > 0 then
  redis.call('PEXPIRE', KEYS[1], expiry)
end
local remaining = redis.call('PTTL', KEYS[1])
if remaining > 0 then
  redis.call('PEXPIRE', KEYS[2], remaining)
end
return {1, ARGV[1]}
