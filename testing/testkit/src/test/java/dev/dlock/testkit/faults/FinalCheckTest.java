package dev.dlock.testkit.faults;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;

/**
 * The suite's final check (are any locks left held?) runs when the last fault may still be under way: a
 * 30-minute run on Sentinel and on Cluster ended during a failover, and the check failed the run with the
 * store's "cannot connect" instead of waiting for the new master. It asks again until the store answers.
 */
class FinalCheckTest {

    @Test
    void aStoreStillRecoveringFromTheLastFaultIsAskedAgainUntilItAnswers() throws Exception {
        InMemoryLockBackend memory = new InMemoryLockBackend();
        RecoveringStore store = new RecoveringStore(memory, 3);
        try (LockManager checker = LockManager.builder(store).build(); LockManager holder = LockManager.builder(memory).build()) {
            LockHandle stuck = holder.acquire("held", Duration.ZERO);
            int left = FaultSuite.keysLeftHeld(checker, List.of("free-1", "held", "free-2"), Duration.ofMillis(100),
                    Duration.ofSeconds(30));
            assertThat(left).as("keys left held").isEqualTo(1);
            assertThat(store.refused.get()).as("calls refused while the store recovered").isEqualTo(3);
            stuck.close();
        }
    }

    @Test
    void aStoreThatNeverComesBackFailsTheCheckOnceTheRecoveryTimeIsOver() throws Exception {
        RecoveringStore store = new RecoveringStore(new InMemoryLockBackend(), Integer.MAX_VALUE);
        try (LockManager checker = LockManager.builder(store).build()) {
            assertThatThrownBy(() -> FaultSuite.keysLeftHeld(checker, List.of("k"), Duration.ofMillis(100), Duration.ofMillis(600)))
                    .isInstanceOf(LockBackendException.class);
        }
    }

    /** A real in-memory store that refuses its first {@code down} acquisitions as a store in a failover does. */
    private static final class RecoveringStore implements LockBackend {
        private final LockBackend store;
        private final int down;
        final AtomicInteger refused = new AtomicInteger();

        RecoveringStore(LockBackend store, int down) {
            this.store = store;
            this.down = down;
        }

        @Override
        public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
            if (refused.get() < down) {
                refused.incrementAndGet();
                throw new LockBackendException("Failed to connect: the master is failing over", null);
            }
            return store.tryAcquire(kind, key, owner, leaseMillis);
        }

        @Override
        public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
            return store.release(kind, key, owner, fencingToken);
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            return store.renew(batch);
        }

        @Override
        public long ping() {
            return store.ping();
        }
    }
}
