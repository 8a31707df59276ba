package dev.dlock.memcached;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockKind;
import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.LockKindsContractTest;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lock kinds' contract against memcached: the store takes exclusive locks only, so the suite checks that
 * every other kind is refused naming the store, and runs the exclusive cases of its lease tests.
 */
class MemcachedLockKindsContractTest extends LockKindsContractTest {

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();

    @Override
    protected BackendFactory factory() {
        return new MemcachedBackendFactory();
    }

    @Override
    protected String connection() {
        return memcached.server().address();
    }

    /**
     * Waits until the lock item is gone from the server, seen without touching it: any renewal, even of 1 ms,
     * would extend it by a whole second, memcached's unit.
     */
    @Override
    protected void awaitRanOut(LockBackend store, LockKind kind, String lockKey, String owner) {
        String item = new MemcachedKeys(MemcachedLockBackend.DEFAULT_KEY_PREFIX).lock(lockKey);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (memcached.server().has(item)) {
            assertThat(System.nanoTime()).as("the lock item of %s gone within 10 s", lockKey).isLessThan(deadline);
            sleepMillis(10);
        }
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Unused: the store queues no fair waiters. */
    @Override
    protected Duration fairWaiterTimeout() {
        return Duration.ofSeconds(1);
    }
}
