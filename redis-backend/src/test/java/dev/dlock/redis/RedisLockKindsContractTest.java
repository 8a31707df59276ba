package dev.dlock.redis;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.LockKindsContractTest;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.time.Duration;

/** The store-neutral contract of the lock kinds (read/write, permits, fair) against a real standalone redis-server. */
class RedisLockKindsContractTest extends LockKindsContractTest {

    private static final Duration WAITER_TIMEOUT = Duration.ofSeconds(1);
    private static RedisServerProcess redis;

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
        return new ShortWaiterTimeout();
    }

    @Override
    protected String connection() {
        return redis.uri();
    }

    @Override
    protected Duration fairWaiterTimeout() {
        return WAITER_TIMEOUT;
    }

    /** Backends whose fair waiters lose their place after a second of silence, so the dead-waiter tests run quickly. */
    public static final class ShortWaiterTimeout extends RedisBackendFactory {
        @Override
        protected RedisLockBackend.Builder configure(RedisLockBackend.Builder builder) {
            return builder.fairWaiterTimeout(WAITER_TIMEOUT);
        }
    }
}
