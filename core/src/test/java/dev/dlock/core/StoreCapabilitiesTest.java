package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

/**
 * The two optional answers a store gives about itself: a store that queues waiters is told when an
 * acquisition stops trying (so its place goes at once), and a store without fencing tokens makes the
 * handle refuse to hand one out instead of a number that protects nothing.
 */
class StoreCapabilitiesTest extends EngineTestSupport {

    @Test
    void anAcquisitionThatTimesOutWithdrawsItsOwnerOnce() {
        RecordingBackend backend = tapped();
        LockManager waiter = manager(backend, b -> { });
        try (LockHandle held = manager().acquire(key, Duration.ZERO)) {
            assertThat(waiter.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofMillis(50)).build())).isEmpty();
        }
        assertThat(backend.acquiringOwners).isNotEmpty().allMatch(backend.acquiringOwners.get(0)::equals);
        assertThat(backend.withdrawals).containsExactly(backend.acquiringOwners.get(0));
    }

    @Test
    void anAcquisitionThatSucceedsWithdrawsNothing() {
        RecordingBackend backend = tapped();
        LockManager locks = manager(backend, b -> { });
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            assertThat(lock.isHeld()).isTrue();
        }
        assertThat(backend.withdrawals).isEmpty();
    }

    @Test
    void anInterruptedAbortedOrFailedAcquisitionWithdraws() throws Exception {
        RecordingBackend backend = tapped();
        LockManager waiter = manager(backend, b -> { });
        try (LockHandle held = manager().acquire(key, Duration.ZERO)) {
            Thread waiting = start("interrupted-waiter", () -> waiter.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(30)).build()));
            await("the waiter to be told the key is held", Duration.ofSeconds(5), () -> backend.heldAnswers.get() >= 2);
            waiting.interrupt();
            waiting.join(5_000);
            assertThat(backend.withdrawals).as("after the interrupt").hasSize(1);

            AtomicBoolean abort = new AtomicBoolean(true);
            assertThat(waiter.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(30)).abortIf(abort::get).build())).isEmpty();
            assertThat(backend.withdrawals).as("after the abort").hasSize(2);
        }
        RecordingBackend unreachable = new RecordingBackend(new UnreachableStore());
        LockManager failing = manager(unreachable, b -> { });
        assertThatThrownBy(() -> failing.acquire(key, Duration.ofSeconds(1))).isInstanceOf(LockBackendException.class);
        assertThat(unreachable.withdrawals).as("after a store error").hasSize(1);
    }

    @Test
    void aStoreWithoutFencingMakesTheHandleRefuseATokenNamingTheStore() {
        RecordingBackend backend = tapped();
        backend.alterCapabilities(declared -> declared.withFencing(false));
        LockManager locks = manager(backend, b -> { });
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            assertThat(lock.isHeld()).as("the lock itself works").isTrue();
            assertThatThrownBy(lock::fencingToken).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining(key).hasMessageContaining("RecordingBackend").hasMessageContaining("no fencing tokens");
            assertThat(lock.toString()).contains("no fencing token");
        }
        try (LockHandle lock = manager().acquire(key, Duration.ZERO)) {
            assertThat(lock.fencingToken()).as("a fencing store still hands tokens out").isPositive();
        }
    }

    /** A store that cannot be reached: every call fails as a refused connection would. */
    private static final class UnreachableStore implements LockBackend {

        @Override
        public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
            throw new LockBackendException("connection refused", null);
        }

        @Override
        public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
            throw new LockBackendException("connection refused", null);
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            throw new LockBackendException("connection refused", null);
        }

        @Override
        public long ping() {
            throw new LockBackendException("connection refused", null);
        }
    }
}
