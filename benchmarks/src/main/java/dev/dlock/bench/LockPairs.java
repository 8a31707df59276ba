package dev.dlock.bench;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/** The acquire + release pairs under measurement, shared by the JMH benchmark and the interleaved harness. */
final class LockPairs implements AutoCloseable {

    private static final String COMPARE_AND_DELETE =
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

    private final UnifiedJedis redis;
    private final RedisLockBackend backend;
    private final LockManager locks;
    private final String compareAndDeleteSha;
    private final String ownerPrefix = UUID.randomUUID() + ":";
    private final AtomicLong ownerSequence = new AtomicLong();

    LockPairs() {
        redis = BenchRedis.client();
        backend = RedisLockBackend.builder(redis).build();
        locks = LockManager.builder(backend).build();
        compareAndDeleteSha = redis.scriptLoad(COMPARE_AND_DELETE);
    }

    /** dlock: acquire (try once) and release through the programmatic API; the fencing token is never asked for. */
    boolean dlock(String key) {
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            return lock.isHeld();
        }
    }

    /** As {@link #dlock}, reading the fencing token once per hold (issued on request: one more round trip). */
    long dlockReadingToken(String key) {
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            return lock.fencingToken();
        }
    }

    /** The Redis backend alone, without the engine: what the scripts cost against the raw baseline. */
    Object backendOnly(String key) {
        String owner = ownerPrefix + ownerSequence.incrementAndGet();
        AcquireResult acquired = backend.tryAcquire(LockKind.EXCLUSIVE, key, owner, 30_000);
        long token = acquired instanceof AcquireResult.Acquired granted ? granted.fencingToken() : 0;
        return backend.release(LockKind.EXCLUSIVE, key, owner, token);
    }

    /** Raw Jedis: SET NX PX with an owner token, then the compare-and-delete script. */
    Object rawJedis(String key) {
        String owner = ownerPrefix + ownerSequence.incrementAndGet();
        String rawKey = "raw:" + key;
        if (redis.set(rawKey, owner, SetParams.setParams().nx().px(30_000)) == null) {
            throw new IllegalStateException("uncontended key was held: " + rawKey);
        }
        return redis.evalsha(compareAndDeleteSha, List.of(rawKey), List.of(owner));
    }

    @Override
    public void close() {
        locks.close();
        backend.close();
        redis.close();
    }
}
