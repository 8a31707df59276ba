-- Deletes the lock only when the caller still owns it, and tells waiters it is free.
-- KEYS[1] lock key, KEYS[2] release notice channel (same hash tag: a cluster script declares every key it touches)
-- ARGV[1] owner token, ARGV[2] 'sharded' to publish with SPUBLISH (Redis 7+ cluster), anything else for PUBLISH
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  if ARGV[2] == 'sharded' then
    redis.call('SPUBLISH', KEYS[2], 'released')
  else
    redis.call('PUBLISH', KEYS[2], 'released')
  end
  return 1
end
return 0
