-- Deletes the lock only when the caller still owns it, and tells waiters it is free when a refused attempt
-- marked it (notices.lua): an uncontended exclusive release publishes nothing.
-- A release leaves a record of itself: the releasing owner in a short-lived key beside the lock key. Owner tokens
-- are unique per acquisition, so a later release by the same owner that finds the key free and the record naming
-- it is this release repeated (its reply was lost, or the client retried); any other free key means the lease was
-- lost (it ran out, or a forced release or a failover dropped it), whether or not another owner took it since.
-- Tokens cannot tell this any more: the exclusive fast path takes a key without issuing one.
-- KEYS[1] lock key, KEYS[2] release notice channel, KEYS[3] the record of the key's last release (one hash tag: a
-- cluster script declares every key it touches)
-- ARGV[1] owner token, ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both', ARGV[3] 'always' to
-- publish even unmarked (a write lock: the readers it keeps out leave no mark), else 'marked', ARGV[4] how long the
-- record of the release lives, in ms
-- Returns 1 released now, 2 already free by this owner's own release (a repeat), 0 free otherwise (lost),
-- -1 held by another owner.
local current = redis.call('GET', KEYS[1])
local held, marked = heldBy(current, ARGV[1])
if held then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[3], ARGV[1], 'PX', ARGV[4])
  if marked or ARGV[3] == 'always' then
    publishRelease(KEYS[2], ARGV[2])
  end
  return 1
end
if current then
  return -1
end
if redis.call('GET', KEYS[3]) == ARGV[1] then
  return 2
end
return 0
