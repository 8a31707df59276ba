package dev.dlock.redis;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Starting and stopping the daemon threads that read pub/sub connections. */
final class NoticeThreads {

    private static final Logger log = LoggerFactory.getLogger(NoticeThreads.class);

    private static final long CLOSE_TIMEOUT_MILLIS = 2_000;

    private NoticeThreads() {
    }

    /** Starts a daemon thread named {@code name}. */
    static Thread start(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    /**
     * Waits a bounded time for a notice thread to end. Never interrupts it: Jedis ends its read loop on
     * interrupt without draining the pending replies and hands the connection back to the pool with
     * those replies unread.
     */
    static void awaitEnd(Thread thread) {
        if (thread == null) {
            return;
        }
        try {
            thread.join(CLOSE_TIMEOUT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            log.warn("Release notice thread {} did not stop within {} ms; it is a daemon and will end with the JVM",
                    thread.getName(), CLOSE_TIMEOUT_MILLIS);
        }
    }
}
