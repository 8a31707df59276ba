-- Shared by the scripts of the non-exclusive kinds (prepended to each when loaded; a script cannot
-- include another). Every time is the Redis server's TIME, never a client clock.

-- The server's time in microseconds and in milliseconds, from one TIME call.
local function serverTime()
  local now = redis.call('TIME')
  local micros = tonumber(now[1]) * 1000000 + tonumber(now[2])
  return micros, math.floor(micros / 1000)
end

-- An integer as Redis wants it: tostring would print large numbers as 1.7e+15.
local function int(value)
  return string.format('%.0f', value)
end

-- The key's next fencing token, max(counter + 1, server time in microseconds), written back: the same
-- rule as acquire.lua, on the same counter, so tokens increase across every kind of the key.
local function nextToken(counterKey, counterTtl, micros)
  -- SET ... GET writes the clock term and reads the old counter in one command (see acquire.lua).
  local token = int(micros)
  local previous = tonumber(redis.call('SET', counterKey, token, 'PX', counterTtl, 'GET') or '0')
  if previous >= micros then
    token = int(previous + 1)
    redis.call('SET', counterKey, token, 'PX', counterTtl)
  end
  return token
end

-- Tells the key's waiters (of every kind) that something was freed; the same modes as release.lua.
-- pcall: the write before it is done, so a failing notice (no SPUBLISH before Redis 7) must not turn it
-- into an error; waiters then find out by asking again.
local function publishRelease(channel, mode)
  if mode ~= 'classic' then
    redis.pcall('SPUBLISH', channel, 'released')
  end
  if mode ~= 'sharded' then
    redis.pcall('PUBLISH', channel, 'released')
  end
end

-- Drops members whose expiry (the score, server ms) has passed.
local function purgeExpired(zset, nowMillis)
  redis.call('ZREMRANGEBYSCORE', zset, '-inf', int(nowMillis))
end

-- Lets a set of expiring members live exactly as long as its latest member.
local function expireWithLatest(zset, nowMillis)
  local latest = redis.call('ZRANGE', zset, -1, -1, 'WITHSCORES')
  if latest[2] then
    redis.call('PEXPIRE', zset, int(math.max(1, tonumber(latest[2]) - nowMillis)))
  end
end

-- Milliseconds until the earliest member of a set of expiring members expires; nil when it is empty.
local function earliestExpiry(zset, nowMillis)
  local earliest = redis.call('ZRANGE', zset, 0, 0, 'WITHSCORES')
  if earliest[2] then
    return math.max(1, tonumber(earliest[2]) - nowMillis)
  end
  return nil
end

-- Adds or extends a member expiring after the lease, and gives the key its fencing token.
local function grantShare(zset, owner, leaseMillis, counterKey, counterTtl, micros, nowMillis)
  redis.call('ZADD', zset, int(nowMillis + tonumber(leaseMillis)), owner)
  expireWithLatest(zset, nowMillis)
  return nextToken(counterKey, counterTtl, micros)
end

