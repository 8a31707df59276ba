package dev.dlock.redis;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;

/**
 * Acquires and releases keys in a loop on its own thread during a failover and measures the error
 * window: from the first failed call to the first successful one after the last failure.
 */
final class FailoverProbe {

    private static final int KEYS = 20;

    private final LockManager locks;
    private final String keyPrefix;
    private final Thread thread;
    private final AtomicLong successes = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong lastSuccessStartedAt = new AtomicLong();
    private final AtomicLong firstErrorAt = new AtomicLong();
    private final AtomicLong firstSuccessAfterErrorAt = new AtomicLong();
    private final AtomicLong longestCallNanos = new AtomicLong();
    private volatile boolean stopped;

    private FailoverProbe(LockManager locks, String keyPrefix) {
        this.locks = locks;
        this.keyPrefix = keyPrefix;
        this.thread = new Thread(this::loop, "failover-probe");
        this.thread.setDaemon(true);
    }

    /** Starts the loop over keys {@code keyPrefix0..19}. */
    static FailoverProbe start(LockManager locks, String keyPrefix) {
        FailoverProbe probe = new FailoverProbe(locks, keyPrefix);
        probe.thread.start();
        return probe;
    }

    /** Waits until {@code count} acquisitions succeeded. */
    void awaitSuccesses(long count) {
        RedisTestSupport.await(count + " acquisitions", Duration.ofSeconds(20), () -> successes.get() >= count);
    }

    /** Waits until an acquisition that started after {@code nanoTime} succeeded. */
    void awaitSuccessAfter(long nanoTime, Duration timeout) {
        RedisTestSupport.await("an acquisition after the failover", timeout, () -> lastSuccessStartedAt.get() - nanoTime > 0);
    }

    /** Stops the loop (bounded) and reports what it saw. */
    Report stop() throws InterruptedException {
        stopped = true;
        thread.join(20_000);
        if (thread.isAlive()) {
            throw new AssertionError("the acquisition loop hangs");
        }
        long window = errors.get() == 0 ? 0 : firstSuccessAfterErrorAt.get() - firstErrorAt.get();
        return new Report(successes.get(), errors.get(), TimeUnit.NANOSECONDS.toMillis(window),
                TimeUnit.NANOSECONDS.toMillis(longestCallNanos.get()));
    }

    private void loop() {
        for (long i = 0; !stopped; i++) {
            long start = System.nanoTime();
            try (LockHandle lock = locks.acquire(keyPrefix + (i % KEYS), Duration.ofSeconds(1))) {
                successes.incrementAndGet();
                lastSuccessStartedAt.set(start);
                if (errors.get() > 0) {
                    firstSuccessAfterErrorAt.compareAndSet(0, System.nanoTime());
                }
            } catch (RuntimeException e) {
                errors.incrementAndGet();
                firstErrorAt.compareAndSet(0, start);
                firstSuccessAfterErrorAt.set(0);
                sleepQuietly();
            }
            longestCallNanos.accumulateAndGet(System.nanoTime() - start, Math::max);
        }
    }

    private static void sleepQuietly() {
        try {
            // Pace the retries of a dead store; the loop is not the system under test.
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** What the loop saw: counts, the error window and the slowest call. */
    record Report(long successes, long errors, long errorWindowMillis, long longestCallMillis) {
    }
}
