-- Deletes the lock only when the caller still owns it, and tells waiters it is free.
-- KEYS[1] lock key
-- ARGV[1] owner token, ARGV[2] release notice channel
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'released')
  return 1
end
return 0
