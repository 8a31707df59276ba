package dev.dlock.core;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.dlock.core.inmemory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A fixed lease that runs out while its holder still runs: the handle reads {@code LOST} (and {@code isHeld()} false)
 * as soon as the lease has passed, but nothing times a fixed lease out, so the listeners hear {@code onLeaseLost} (and
 * {@code dlock.lock.lease.lost} counts) at the release, which throws {@code LockLostException}. A watched lease's loss is
 * reported when the watchdog finds it instead. What docs/migration/spring-integration.md says.
 */
class FixedLeaseRunOutTest {

    @Test
    void aFixedLeaseThatRunsOutReadsLostAtOnceAndIsReportedAtTheRelease() throws InterruptedException {
        List<String> lost = new CopyOnWriteArrayList<>();
        LockListener listener = new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                lost.add(key + ": " + reason);
            }
        };
        try (InMemoryLockBackend store = new InMemoryLockBackend();
             LockManager locks = LockManager.builder(store).listener(listener).build()) {
            LockHandle lock = locks.acquire(LockRequest.builder("report").leaseTime(Duration.ofMillis(100))
                    .waitTime(Duration.ZERO).build());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (lock.state() != LockState.LOST && System.nanoTime() - deadline < 0) {
                Thread.sleep(10);
            }
            assertThat(lock.state()).as("the handle once the fixed lease has passed").isEqualTo(LockState.LOST);
            assertThat(lock.isHeld()).isFalse();
            assertThat(lost).as("onLeaseLost before the release").isEmpty();

            assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
            assertThat(lost).as("onLeaseLost at the release").singleElement().asString()
                    .contains("report").contains("the fixed lease of 100 ms ran out");
        }
    }
}
