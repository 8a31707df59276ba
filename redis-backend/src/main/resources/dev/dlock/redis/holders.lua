-- The holders of a key as one kind, prepended after fencing.lua (the server's time) and notices.lua (the waiter's
-- mark, stripped from the owner) to read_holders.lua and force_release.lua. Reads only.
-- liveHolders(key, shape): key is the kind's lease key, an owner key (exclusive, fair, write; shape 'owner') or a
-- set of expiring members (read, permits; shape 'set'). Answers {owner, remaining ms, owner, remaining ms, ...},
-- empty when the key is free.
local function unmarked(value)
  if string.sub(value, -#WAITED) == WAITED then
    return string.sub(value, 1, #value - #WAITED)
  end
  return value
end

-- The holders of the lease key, each with the time its lease has left; shared with force_release.lua.
local function liveHolders(key, shape)
  if shape == 'owner' then
    local value = redis.call('GET', key)
    if not value then
      return {}
    end
    return {unmarked(value), redis.call('PTTL', key)}
  end
  local _, now = serverTime()
  -- Members whose expiry passed are no holders even before an acquisition purges them.
  local members = redis.call('ZRANGEBYSCORE', key, '(' .. int(now), '+inf', 'WITHSCORES')
  local holders = {}
  for i = 1, #members, 2 do
    holders[#holders + 1] = members[i]
    holders[#holders + 1] = tonumber(members[i + 1]) - now
  end
  return holders
end
