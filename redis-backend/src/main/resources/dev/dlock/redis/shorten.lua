-- A new term of a live lease (exclusive, fair and write leases), under a new owner token, so that no command still on
-- its way for the owner (a renewal that timed out at the client and was retried, a release) can change it again:
-- a release before lockAtLeastFor ran out keeps the key taken for what is left by a retired owner token that nobody
-- holds, and then it frees itself; an extension gives the holder's lease a new term of its own. A key that is missing
-- or another owner's is left as it is: a late call revives nothing.
-- KEYS[1] the kind's owner key
-- ARGV[1] owner token, ARGV[2] the new term's owner token, ARGV[3] the new term, in ms
-- Returns 1 done (also when the new owner holds it already: this ran before), 0 key missing, -1 another owner's.
local current = redis.call('GET', KEYS[1])
if heldBy(current, ARGV[2]) then
  return 1
end
local held, waited = heldBy(current, ARGV[1])
if held then
  local value = ARGV[2]
  if waited then
    value = value .. WAITED
  end
  redis.call('SET', KEYS[1], value, 'PX', ARGV[3])
  return 1
end
if current then
  return -1
end
return 0
