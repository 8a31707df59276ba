package dev.dlock.redis;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.RecordingBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The backend contract against a real standalone redis-server started for this class. */
class RedisLockManagerContractTest extends StoreFailureContractTest {

    static RedisServerProcess redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    protected BackendFactory factory() {
        return new RedisBackendFactory();
    }

    @Override
    protected String connection() {
        return redis.uri();
    }

    @Override
    protected void deleteKey(String key) {
        try (Jedis admin = redis.admin()) {
            assertThat(admin.del(RedisLockBackend.DEFAULT_KEY_PREFIX + "{" + key + "}")).as("deleted the lock key").isEqualTo(1);
        }
    }

    @Override
    protected void wipeStore() {
        try (Jedis admin = redis.admin()) {
            admin.flushAll();
        }
    }

    @Override
    protected void crashStore() {
        redis.kill();
    }

    @Override
    protected void restartStore() {
        redis.restart();
    }

    @Override
    protected long storeCommandCount() {
        return redis.totalCommandCalls();
    }

    @Test
    void everyScriptRunsAgainAfterScriptFlush() {
        RecordingBackend backend = newBackend();
        // A lease a loaded machine can renew in time: a 300 ms one ran out there before two renewals came round.
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofSeconds(2)));
        String key = "noscript:" + System.nanoTime();
        try (Jedis admin = redis.admin()) {
            admin.scriptFlush();
        }
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            try (Jedis admin = redis.admin()) {
                admin.scriptFlush();
            }
            long renewals = backend.renewalsOf(key);
            awaitTrue(Duration.ofSeconds(30), () -> backend.renewalsOf(key) >= renewals + 2);
            assertThat(lock.isHeld()).as("renewed through EVAL after NOSCRIPT").isTrue();
            try (Jedis admin = redis.admin()) {
                admin.scriptFlush();
            }
        }
        assertThat(manager().tryAcquire(key)).as("released through EVAL after NOSCRIPT").isPresent().get()
                .satisfies(LockHandle::close);
    }

    @Test
    void fencingTokensKeepIncreasingAfterTheCounterIsGone() {
        LockManager locks = manager();
        String key = "fence:" + System.nanoTime();
        List<Long> tokens = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 3; i++) {
                try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
                    tokens.add(lock.fencingToken());
                }
            }
            try (Jedis admin = redis.admin()) {
                admin.del(RedisLockBackend.DEFAULT_KEY_PREFIX + "{" + key + "}:fence");
            }
        }
        assertStrictlyIncreasing(tokens);
        try (Jedis admin = redis.admin()) {
            assertThat(admin.pttl(RedisLockBackend.DEFAULT_KEY_PREFIX + "{" + key + "}:fence"))
                    .as("no fencing counter is left without an expiry").isNotEqualTo(-1L);
        }
    }
}
