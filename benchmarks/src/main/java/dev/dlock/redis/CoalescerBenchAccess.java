package dev.dlock.redis;

import dev.dlock.core.LockKind;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import redis.clients.jedis.UnifiedJedis;

/**
 * What {@code dev.dlock.bench.CoalescerLanes} needs from inside the Redis store's package: a store whose coalescer
 * runs a chosen number of lanes per node, and the pair a Lua-free exclusive acquisition makes (issue 30) sent
 * through such a coalescer.
 */
public final class CoalescerBenchAccess {

    private static final LuaScript RELEASE = LuaScript.load("release.lua", "notices.lua");
    private static final RedisKeys KEYS = new RedisKeys("bench-sim:");

    private CoalescerBenchAccess() {
    }

    /** A store over {@code client} whose coalescer has between {@code minLanes} and {@code maxLanes} lanes per node in use. */
    public static RedisLockBackend backend(UnifiedJedis client, int minLanes, int maxLanes) {
        return RedisLockBackend.builder(client).coalescingLanes(minLanes, maxLanes).build();
    }

    /**
     * One uncontended pair as the store makes it once acquisition is a plain {@code SET NX PX}: that SET, then the
     * release script, both through a coalescer with between {@code minLanes} and {@code maxLanes} lanes in use; the
     * function takes a key and answers the release script's reply.
     */
    public static Function<String, Object> setThenRelease(UnifiedJedis client, int minLanes, int maxLanes) {
        ScriptCoalescer coalescer = new ScriptCoalescer(client, null, false, minLanes, maxLanes);
        String ownerPrefix = UUID.randomUUID() + ":";
        AtomicLong owners = new AtomicLong();
        return key -> {
            String owner = ownerPrefix + owners.incrementAndGet();
            String lockKey = KEYS.lockKey(key);
            if (coalescer.setIfAbsent(0, lockKey, owner, 30_000) == null) {
                throw new IllegalStateException("uncontended key " + key + " was taken");
            }
            // As RedisLockBackend.releaseOnce sends it: the lock key, its channel and the record of its last release.
            return coalescer.run(RELEASE, 0, List.of(lockKey, KEYS.releaseChannel(key), KEYS.lastReleaseKey(LockKind.EXCLUSIVE, key)),
                    List.of(owner, "classic", "marked", Long.toString(RedisLockBackend.RELEASE_RECORD_MILLIS)));
        };
    }
}
