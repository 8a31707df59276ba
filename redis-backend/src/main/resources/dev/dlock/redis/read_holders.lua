-- Who holds a key as one kind (holders.lua's liveHolders), read only: never extends, marks or purges anything.
-- KEYS[1] the kind's lease key; ARGV[1] 'owner' or 'set' (holders.lua)
return liveHolders(KEYS[1], ARGV[1])
