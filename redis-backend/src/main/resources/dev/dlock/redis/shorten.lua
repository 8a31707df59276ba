-- A release before lockAtLeastFor ran out (exclusive, fair and write leases): the key stays taken for what is left,
-- now by a retired owner token that nobody holds, so that no command still on its way for the owner (a renewal that
-- timed out at the client and was retried) can extend it again; it then frees itself.
-- KEYS[1] the kind's owner key
-- ARGV[1] owner token, ARGV[2] retired owner token, ARGV[3] what is left, in ms
-- Returns 1 done (also when the retired owner holds it already: this ran before), 0 key missing, -1 another owner's.
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
