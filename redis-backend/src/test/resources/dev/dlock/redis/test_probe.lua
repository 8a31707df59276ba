-- For CoalescedBatchScriptTest: appends ARGV[1] to the list KEYS[1] and answers {KEYS[1], tagged(ARGV[1]), the list's
-- length} (tagged comes from test_prelude.lua). A key of another type fails with WRONGTYPE; ARGV[1] 'refuse' answers
-- an error reply, 'raise' raises a Lua error, 'nothing' answers nil.
if ARGV[1] == 'refuse' then
  return redis.error_reply('DLOCKTEST refused on purpose')
elseif ARGV[1] == 'raise' then
  error('raised on purpose')
elseif ARGV[1] == 'nothing' then
  return nil
end
return {KEYS[1], tagged(ARGV[1]), redis.call('RPUSH', KEYS[1], ARGV[1])}
