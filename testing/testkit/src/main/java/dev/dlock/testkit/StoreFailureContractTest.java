package dev.dlock.testkit;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The contract of {@link LockBackendContractTest} plus what a store that runs as a process of its
 * own must survive: crashes during a hold and during a wait, and a dead store at acquire time. Each
 * test restarts the store before it ends.
 */
public abstract class StoreFailureContractTest extends LockBackendContractTest {

    /** Kills the store process abruptly. */
    protected abstract void crashStore();

    /** Starts the store again at the same address, empty. */
    protected abstract void restartStore();

    @Test
    void aCrashDuringAHoldIsReportedAsALostLease() throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofSeconds(1)).listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                lost.countDown();
            }
        }));
        LockHandle lock = locks.acquire(key(), Duration.ZERO);
        try {
            crashStore();
            assertThat(lost.await(15, TimeUnit.SECONDS)).as("holder told within the lease").isTrue();
            assertThat(lock.isHeld()).isFalse();
        } finally {
            restartStore();
        }
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
    }

    @Test
    void aCrashDuringAWaitEndsTheWaitWithABackendError() throws Exception {
        LockManager holder = manager();
        RecordingBackend waiterBackend = newBackend();
        LockManager waiter = manager(waiterBackend, b -> { });
        holder.acquire(key(), Duration.ZERO);
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        Thread waiting = start(() -> {
            try {
                waiter.acquire(key(), Duration.ofSeconds(60)).close();
            } catch (Throwable t) {
                outcome.set(t);
            }
        });
        try {
            awaitTrue(Duration.ofSeconds(10), () -> waiterBackend.heldAnswers.get() >= 2);
            crashStore();
            waiting.join(20_000);
            assertThat(waiting.isAlive()).as("the waiter is not left hanging").isFalse();
        } finally {
            restartStore();
        }
        assertThat(outcome.get()).isInstanceOf(LockBackendException.class);
        assertThat(waiter.admin().heldLocks()).isEmpty();
    }

    @Test
    void anAcquireAgainstADeadStoreFailsFast() {
        LockManager locks = manager();
        try {
            crashStore();
            long start = System.nanoTime();
            assertThatThrownBy(() -> locks.acquire(key(), Duration.ofSeconds(30))).isInstanceOf(LockBackendException.class);
            assertThat(System.nanoTime() - start).as("fails within the client timeout, not the wait time")
                    .isLessThan(TimeUnit.SECONDS.toNanos(15));
            assertThat(locks.admin().heldLocks()).isEmpty();
        } finally {
            restartStore();
        }
        try (LockHandle lock = locks.acquire(key(), Duration.ofSeconds(10))) {
            assertThat(lock.isHeld()).as("works again once the store is back").isTrue();
        }
    }
}
