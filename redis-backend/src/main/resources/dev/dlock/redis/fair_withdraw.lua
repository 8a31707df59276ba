-- A fair waiter gives up its place in the queue.
-- KEYS[1] lock key, KEYS[2] queue, KEYS[3] seen, KEYS[4] release notice channel (one hash tag)
-- ARGV[1] owner token, ARGV[2] how to publish the notice: 'sharded', 'classic' or 'both' (notices.lua)
-- Returns 1 when the owner was queued, 0 otherwise.
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
  return 0
end
-- The next waiter may take a free lock now rather than when it next asks.
if head == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  publishRelease(KEYS[4], ARGV[2])
end
return 1
