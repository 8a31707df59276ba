-- The release-notice rule, prepended to every script that checks an exclusive holder or publishes a notice
-- (a script cannot include another).
--
-- A refused attempt marks the holder's value (owner .. '+waited'): only a marked release publishes a notice
-- (unless the release asks for 'always': a write lock, whose refused readers leave no mark), and a marked
-- hand-off tells the holder's JVM that others wait. No wake-up is lost: a waiter subscribes before it asks
-- again, and the mark is set in the same script that refuses it, so every release after that publishes. A mark
-- a failover lost (replication is asynchronous) is set again by the waiter's next question, at most a second
-- later. A notice goes out as 'sharded' (SPUBLISH), 'classic' (PUBLISH) or 'both' (a cluster whose JVMs may
-- wait either way).

local WAITED = '+waited'

-- Whether a lock key's value is the owner's, marked or not; and whether it is marked.
local function heldBy(value, owner)
  if value == owner then
    return true, false
  end
  if value == owner .. WAITED then
    return true, true
  end
  return false, false
end

-- Marks a held lock key's value, once, so that its release publishes a notice.
local function markWaited(key, value)
  if value and string.sub(value, -#WAITED) ~= WAITED then
    redis.call('SET', key, value .. WAITED, 'KEEPTTL')
  end
end

-- Tells the key's waiters (of every kind) that something was freed.
-- pcall: the write before it is done and cannot be rolled back, so a failing notice (no SPUBLISH before
-- Redis 7) must not turn it into an error; waiters then find out by asking again.
local function publishRelease(channel, mode)
  if mode ~= 'classic' then
    redis.pcall('SPUBLISH', channel, 'released')
  end
  if mode ~= 'sharded' then
    redis.pcall('PUBLISH', channel, 'released')
  end
end

