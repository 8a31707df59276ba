package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@code virtualThreads(true)}: the store calls of asynchronous acquisitions run on virtual threads (Java 21+); on a
 * Java without them the builder says so. Run on the default JDK 17 and on JDK 25.
 */
class VirtualThreadsTest extends EngineTestSupport {

    private static boolean hasVirtualThreads() {
        return Runtime.version().feature() >= 21;
    }

    private static boolean isVirtual(Thread thread) {
        try {
            return (Boolean) Thread.class.getMethod("isVirtual").invoke(thread);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    private List<Boolean> storeCallThreads(boolean virtual) throws Exception {
        RecordingBackend tapped = tapped();
        List<Boolean> onVirtual = new CopyOnWriteArrayList<>();
        tapped.aroundAcquire(call -> {
            onVirtual.add(isVirtual(Thread.currentThread()));
            return call.get();
        });
        LockManager locks = manager(tapped, b -> b.virtualThreads(virtual));
        LockManager other = manager();
        // Held elsewhere first, so that the acquisition's store calls run on the async pool after a wait.
        LockHandle blocker = other.acquire(key, Duration.ZERO);
        var pending = locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(10)).build());
        await("a first attempt", Duration.ofSeconds(10), () -> !onVirtual.isEmpty());
        blocker.close();
        pending.get(10, TimeUnit.SECONDS).close();
        return onVirtual.subList(1, onVirtual.size());
    }

    @Test
    void asynchronousStoreCallsRunOnVirtualThreadsWhenAsked() throws Exception {
        assumeTrue(hasVirtualThreads(), "Java " + Runtime.version().feature() + " has no virtual threads");

        assertThat(storeCallThreads(true)).as("the attempts after the wait").isNotEmpty().containsOnly(true);
    }

    @Test
    void andOnPlatformThreadsByDefault() throws Exception {
        assertThat(storeCallThreads(false)).as("the attempts after the wait").isNotEmpty().containsOnly(false);
    }

    @Test
    void aJavaWithoutVirtualThreadsRefusesTheOptionAtBuild() {
        assumeTrue(!hasVirtualThreads(), "this Java has virtual threads");

        assertThatThrownBy(() -> LockManager.builder(store).virtualThreads(true)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("virtual threads need Java 21 or later");
    }
}
