package dev.dlock.bench;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Uncontended acquire + release on distinct keys (one per thread): dlock's programmatic API against
 * the raw Jedis baseline (SET NX PX, then a Lua compare-and-delete) on the same Redis.
 */
public class AcquireReleaseBenchmark {

    private static final String COMPARE_AND_DELETE =
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

    /** Clients shared by all benchmark threads. */
    @State(Scope.Benchmark)
    public static class Clients {
        UnifiedJedis redis;
        RedisLockBackend backend;
        LockManager locks;
        String compareAndDeleteSha;
        final String ownerPrefix = UUID.randomUUID() + ":";
        final AtomicLong ownerSequence = new AtomicLong();

        /** Connects to the harness's Redis. */
        @Setup(Level.Trial)
        public void connect() {
            redis = BenchRedis.client();
            backend = RedisLockBackend.builder(redis).build();
            locks = LockManager.builder(backend).build();
            compareAndDeleteSha = redis.scriptLoad(COMPARE_AND_DELETE);
        }

        /** Closes everything {@link #connect()} opened. */
        @TearDown(Level.Trial)
        public void close() {
            locks.close();
            backend.close();
            redis.close();
        }
    }

    /** The key of one benchmark thread. */
    @State(Scope.Thread)
    public static class ThreadKey {
        final String key = "bench:" + UUID.randomUUID();
    }

    /** dlock: acquire (try once) and release through the programmatic API. */
    @Benchmark
    public long dlock(Clients clients, ThreadKey thread) {
        try (LockHandle lock = clients.locks.acquire(thread.key, Duration.ZERO)) {
            return lock.fencingToken();
        }
    }

    /** Raw Jedis: SET NX PX with an owner token, then the compare-and-delete script. */
    @Benchmark
    public Object rawJedis(Clients clients, ThreadKey thread) {
        String owner = clients.ownerPrefix + clients.ownerSequence.incrementAndGet();
        String key = "raw:" + thread.key;
        if (clients.redis.set(key, owner, SetParams.setParams().nx().px(30_000)) == null) {
            throw new IllegalStateException("uncontended key was held: " + key);
        }
        return clients.redis.evalsha(clients.compareAndDeleteSha, List.of(key), List.of(owner));
    }
}
