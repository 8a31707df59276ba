package dev.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.time.Duration;

/**
 * What a waiting thread blocks on, for tests that a caller waiting for the store holds no monitor and waits on a
 * {@code java.util.concurrent} lock: before JDK 24 a virtual thread blocked holding or waiting on a monitor is pinned
 * to its carrier, and JDK 17 and 25 (the ones tests run on) show that only this way.
 */
public final class ThreadWaits {

    private ThreadWaits() {
    }

    /** The thread's state, stack and locks now; null once it ended. */
    public static ThreadInfo info(Thread thread) {
        return ManagementFactory.getThreadMXBean().getThreadInfo(new long[] {thread.getId()}, true, false)[0];
    }

    /** Waits until {@code thread} waits, with a timeout, on a lock or condition, and returns its state then. */
    public static ThreadInfo awaitTimedWaiting(Thread thread, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            ThreadInfo info = info(thread);
            if (isTimedWaiting(info)) {
                return info;
            }
            assertThat(System.nanoTime()).as("%s waits within %s", thread.getName(), timeout).isLessThan(deadline);
            Thread.sleep(10);
        }
    }

    /** True when {@code info} is of a thread waiting, with a timeout, on a lock or condition. */
    public static boolean isTimedWaiting(ThreadInfo info) {
        return info != null && info.getThreadState() == Thread.State.TIMED_WAITING && info.getLockInfo() != null;
    }

    /** Asserts that the thread {@code info} shows holds no monitor and waits on a {@code java.util.concurrent} lock. */
    public static void assertWaitsHoldingNoMonitor(ThreadInfo info) {
        assertThat(info.getLockedMonitors()).as("monitors the waiting caller holds").isEmpty();
        assertThat(info.getLockInfo().getClassName()).as("what the waiting caller waits on").startsWith("java.util.concurrent.locks.");
    }
}
