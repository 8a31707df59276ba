-- Takes the lock for an owner, or marks the holder and reports the remaining TTL when another holds it. The
-- exclusive fast path sends a plain SET NX PX first and runs this only when that was refused (or, with
-- 'issue', for a store that issues the token with the acquisition: Redlock's nodes).
-- Runs after fencing.lua and notices.lua (the token and the mark of a refused attempt).
-- KEYS[1] lock key, KEYS[2] fencing counter (same hash tag)
-- ARGV[1] owner token, ARGV[2] lease in ms, ARGV[3] counter TTL in ms, ARGV[4] 'issue' to issue the fencing token
-- now, else 'on-request' (issue_token.lua issues it when the holder asks)
-- Returns {1, token} when the owner holds the key now (token 0: not issued), {0, PTTL} when another owner holds it.
local function taken()
  if ARGV[4] == 'issue' then
    return {1, nextToken(KEYS[2], ARGV[3], serverTime())}
  end
  return {1, 0}
end
-- Again: the key may have been freed since the SET NX that sent us here.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return taken()
end
local current = redis.call('GET', KEYS[1])
-- Already ours: a client retry after a lost reply sends the SET (or this script) twice for one acquisition.
if heldBy(current, ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return taken()
end
markWaited(KEYS[1], current)
return {0, redis.call('PTTL', KEYS[1])}
