-- A prelude for CoalescedBatchScriptTest: a function its probe script calls, as the library's scripts call theirs.
local function tagged(value)
  return 'tagged:' .. value
end
