-- Deletes the lock only when the caller still owns it, and tells waiters it is free when a refused attempt
-- marked it (notices.lua): an uncontended exclusive release publishes nothing.
-- KEYS[1] lock key, KEYS[2] release notice channel, KEYS[3] fencing counter (one hash tag: a cluster
-- script declares every key it touches)
-- ARGV[1] owner token, ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both', ARGV[3] the fencing
-- token the owner's acquisition got, ARGV[4] 'always' to publish even unmarked (a write lock: the readers it
-- keeps out leave no mark), else 'marked'
-- Returns 1 released now, 2 already free with no acquisition after the owner's (a repeated release),
-- 0 gone after another acquisition or with the counter lost, -1 held by another owner.
local current = redis.call('GET', KEYS[1])
local held, marked = heldBy(current, ARGV[1])
if held then
  redis.call('DEL', KEYS[1])
  if marked or ARGV[4] == 'always' then
    publishRelease(KEYS[2], ARGV[2])
  end
  return 1
end
if current then
  return -1
end
if redis.call('GET', KEYS[3]) == ARGV[3] then
  return 2
end
return 0
