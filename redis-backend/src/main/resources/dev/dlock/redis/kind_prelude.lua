-- The sets of expiring members (read leases, permits) of the non-exclusive kinds, prepended after fencing.lua
-- to each script that keeps one (a script cannot include another). Every time is the Redis server's TIME.

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

