-- The fencing-token rule, prepended to every script that issues or raises a token (a script cannot include
-- another). Every time is the Redis server's TIME, never a client clock.
--
-- A key's next token is max(counter + 1, server time in microseconds), written back to the key's counter with
-- the counter TTL. The expiry keeps an abandoned key's counter from living forever; the clock term keeps tokens
-- increasing where the counter alone cannot: a counter that expired, or a promoted replica whose counter is
-- stale because it missed the last acquisitions on the old master. Every kind of a key uses the same counter,
-- so tokens increase across kinds. Tokens stay below 2^53, exact in a Lua number, and compare as numbers.

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

-- The key's next fencing token (the rule above), written back to the counter.
local function nextToken(counterKey, counterTtl, micros)
  -- SET ... GET writes the clock term and reads the old counter in one command; only when the counter is
  -- not behind the clock (acquisitions faster than one per microsecond, or a clock set back) is it rewritten.
  local token = int(micros)
  local previous = tonumber(redis.call('SET', counterKey, token, 'PX', counterTtl, 'GET') or '0')
  if previous >= micros then
    token = int(previous + 1)
    redis.call('SET', counterKey, token, 'PX', counterTtl)
  end
  return token
end
