package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.testkit.RecordingBackend;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A key's first waiter waits for the store's release notices to come up (a round trip on Redis, up to a second when
 * its notice connection is down) holding no monitor of the engine: a monitor held through that wait would make the
 * key's other callers wait behind it, and pins a virtual thread to its carrier on JDK 21 to 23.
 */
class NoticeActivationWaitTest {

    @Test
    void theWaitForTheKeysNoticesToFlowHoldsNoMonitorOfTheEngine() throws Exception {
        InMemoryLockBackend shared = new InMemoryLockBackend();
        RecordingBackend store = new RecordingBackend(shared);
        List<String> monitorsHeldWhileWaiting = new CopyOnWriteArrayList<>();
        List<String> waits = new CopyOnWriteArrayList<>();
        store.alterCapabilities(declared -> declared.withReleaseNotices(
                recordingMonitorsInAwaitActive(declared.releaseNotices().orElseThrow(), waits, monitorsHeldWhileWaiting)));
        ExecutorService waiter = Executors.newSingleThreadExecutor();
        try (LockManager otherJvm = LockManager.builder(shared).build(); LockManager locks = LockManager.builder(store).build()) {
            LockHandle held = otherJvm.acquire("k", Duration.ZERO);
            Future<Boolean> waited = waiter.submit(() -> {
                try (LockHandle lock = locks.acquire("k", Duration.ofSeconds(60))) {
                    return lock.isHeld();
                }
            });
            EngineTestSupport.await("the waiter waited for the key's notices", Duration.ofSeconds(30), () -> !waits.isEmpty());
            held.close();
            assertThat(waited.get(60, TimeUnit.SECONDS)).as("the waiter took the key once it was released").isTrue();
        } finally {
            waiter.shutdownNow();
        }
        assertThat(monitorsHeldWhileWaiting).as("monitors the waiting thread held inside awaitActive").isEmpty();
    }

    /** The store's notices, their subscriptions noting the monitors their caller holds whenever it waits for them to flow. */
    private static ReleaseNotices recordingMonitorsInAwaitActive(ReleaseNotices notices, List<String> waits, List<String> monitors) {
        return (key, onRelease) -> {
            ReleaseNotices.Subscription subscription = notices.subscribe(key, onRelease);
            return new ReleaseNotices.Subscription() {
                @Override
                public boolean awaitActive(Duration timeout) throws InterruptedException {
                    monitors.addAll(engineMonitorsHeldByTheCurrentThread());
                    waits.add(key);
                    return subscription.awaitActive(timeout);
                }

                @Override
                public boolean isActive() {
                    // Not flowing yet when first asked, as on a store that must subscribe over the network.
                    return !waits.isEmpty() && subscription.isActive();
                }

                @Override
                public void close() {
                    subscription.close();
                }
            };
        };
    }

    private static List<String> engineMonitorsHeldByTheCurrentThread() {
        ThreadInfo info = ManagementFactory.getThreadMXBean()
                .getThreadInfo(new long[] {Thread.currentThread().getId()}, true, false)[0];
        List<String> held = new ArrayList<>();
        for (MonitorInfo monitor : info.getLockedMonitors()) {
            if (monitor.getClassName().startsWith("dev.dlock.")) {
                held.add(monitor.getClassName() + " at " + monitor.getLockedStackFrame());
            }
        }
        return held;
    }
}
