package dev.dlock.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Runs one call from several threads at once, for tests that count overlaps with an {@link OverlapDetector}. */
public final class Concurrently {

    private Concurrently() {
    }

    /**
     * Calls {@code call} {@code callsPerThread} times on each of {@code threads} threads and waits for
     * all of them, at most {@code timeout}; the first failure of any call is rethrown.
     *
     * @throws ExecutionException when a call threw (its exception is the cause)
     * @throws TimeoutException when the calls did not all finish within {@code timeout}
     */
    public static void run(int threads, int callsPerThread, Duration timeout, Runnable call)
            throws InterruptedException, ExecutionException, TimeoutException {
        if (threads < 1 || callsPerThread < 1) {
            throw new IllegalArgumentException("Concurrently.run needs at least 1 thread and 1 call, got threads="
                    + threads + ", callsPerThread=" + callsPerThread);
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                futures.add(pool.submit(() -> {
                    for (int i = 0; i < callsPerThread; i++) {
                        call.run();
                    }
                }));
            }
            for (Future<?> future : futures) {
                future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
