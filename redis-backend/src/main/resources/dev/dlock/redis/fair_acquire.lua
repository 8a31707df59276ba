-- Takes a key's lock in arrival order across clients, or queues the owner and reports how long to wait.
-- KEYS[1] lock key (shared with exclusive acquisitions), KEYS[2] queue (owner -> arrival sequence),
-- KEYS[3] seen (owner -> when it last asked, server ms), KEYS[4] fencing counter (one hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms, ARGV[4] waiter timeout in ms
-- Returns {1, token} when the owner holds the lock now, {0, ms, ahead} when it must ask again within that
-- time to keep its place, with how many waiters are queued before it.
-- The holder's value is marked (notices.lua) whenever a waiter may sleep on its release: by
-- a refused waiter, and by the taking waiter itself when others are still queued behind it.
local micros, now = serverTime()
local timeout = tonumber(ARGV[4])

-- A waiter that stopped asking (its process died, its connection broke) loses its place after the
-- timeout, so it cannot block the queue behind it for longer than that; all such waiters go at once.
local dead = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', int(now - timeout))
for i = 1, #dead do
  redis.call('ZREM', KEYS[2], dead[i])
  redis.call('ZREM', KEYS[3], dead[i])
end

local holder = redis.call('GET', KEYS[1])
-- Already ours (the value may carry a waiter's mark): a client retry after a lost reply runs this twice for one
-- acquisition.
if heldBy(holder, ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  return {1, nextToken(KEYS[4], ARGV[3], micros)}
end

if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  redis.call('ZADD', KEYS[2], int(last[2] and tonumber(last[2]) + 1 or 1), ARGV[1])
end
-- Only ever the server's present: a score in the future would keep a dead waiter for longer.
redis.call('ZADD', KEYS[3], int(now), ARGV[1])

-- A queue entry without a seen entry (they expired apart) is a waiter nobody vouches for.
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
while head and not redis.call('ZSCORE', KEYS[3], head) do
  redis.call('ZREM', KEYS[2], head)
  head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
end

if not holder and head == ARGV[1] then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  -- Waiters still queued may have been refused while the key was free (not their turn, no holder to mark): they
  -- sleep until a release notice, so the new holder's value is marked at once and its release publishes one.
  local value = ARGV[1]
  if redis.call('ZCARD', KEYS[2]) > 0 then
    value = value .. WAITED
  end
  redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
  return {1, nextToken(KEYS[4], ARGV[3], micros)}
end

-- Abandoned queues disappear: every waiter refreshes these on each call.
redis.call('PEXPIRE', KEYS[2], int(3 * timeout))
redis.call('PEXPIRE', KEYS[3], int(3 * timeout))
local wait = math.max(1, math.floor(timeout / 3))
if holder then
  -- Marked, so that the holder's release publishes the notice this waiter waits for.
  markWaited(KEYS[1], holder)
  local holderTtl = redis.call('PTTL', KEYS[1])
  if holderTtl > 0 and holderTtl < wait then
    wait = holderTtl
  end
end
return {0, wait, redis.call('ZRANK', KEYS[2], ARGV[1])}
