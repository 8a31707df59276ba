package dev.dlock.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * Measures variants of one operation in alternating short rounds on the same Redis and reports
 * the median of their per-round ratios. On a shared 2-core machine throughput drifts by tens of
 * percent between minutes; alternating rounds make the ratio immune to that drift.
 */
final class InterleavedThroughput {

    /** One named variant: given a thread's key, does one operation. */
    record Variant(String name, Function<String, Object> operation) {
    }

    /**
     * Median ops/s of each variant, the median per-round ratio of each variant to the first, and
     * every round's ops/s ({@code opsPerSecondByRound[variant][round]}) for ratios between other pairs.
     */
    record Result(int threads, double[] medianOpsPerSecond, double[] medianRatioToFirst, double[][] opsPerSecondByRound) {

        /** The median over rounds of variant {@code a}'s ops/s over variant {@code b}'s in the same round. */
        double medianRatio(int a, int b) {
            return medianRatio(opsPerSecondByRound[a], opsPerSecondByRound[b]);
        }

        /** The median over rounds of {@code a[round] / b[round]}. */
        static double medianRatio(double[] a, double[] b) {
            double[] ratios = new double[a.length];
            for (int round = 0; round < a.length; round++) {
                ratios[round] = a[round] / b[round];
            }
            return median(ratios);
        }
    }

    private InterleavedThroughput() {
    }

    static Result measure(List<Variant> variants, int threads, int rounds, long roundMillis) throws InterruptedException {
        return measure(variants, threads, rounds, roundMillis, () -> { });
    }

    /** As {@link #measure(List, int, int, long)}, calling {@code afterWarmUp} between the warm-up and the measured rounds. */
    static Result measure(List<Variant> variants, int threads, int rounds, long roundMillis, Runnable afterWarmUp)
            throws InterruptedException {
        List<String> keys = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            keys.add("bench:" + UUID.randomUUID());
        }
        for (Variant variant : variants) {
            run(variant, keys, roundMillis); // warm-up
        }
        afterWarmUp.run();
        double[][] opsPerSecond = new double[variants.size()][rounds];
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < variants.size(); i++) {
                // Alternate the order so that neither variant always runs first in a round.
                int v = round % 2 == 0 ? i : variants.size() - 1 - i;
                opsPerSecond[v][round] = run(variants.get(v), keys, roundMillis);
            }
        }
        double[] medians = new double[variants.size()];
        double[] ratios = new double[variants.size()];
        for (int v = 0; v < variants.size(); v++) {
            medians[v] = median(opsPerSecond[v]);
            ratios[v] = Result.medianRatio(opsPerSecond[v], opsPerSecond[0]);
        }
        return new Result(threads, medians, ratios, opsPerSecond);
    }

    private static double run(Variant variant, List<String> keys, long millis) throws InterruptedException {
        long start = System.nanoTime();
        long ops = runOnEveryKey(variant.name(), variant.operation(), keys, millis);
        return ops / ((System.nanoTime() - start) / 1e9);
    }

    /**
     * Runs {@code operation} in a loop on a thread per key for {@code millis} and answers how many ran. The first
     * failure of any thread stops them all and fails the run: a thread that died silently would show as a slower
     * library.
     */
    static long runOnEveryKey(String name, Function<String, Object> operation, List<String> keys, long millis)
            throws InterruptedException {
        LongAdder ops = new LongAdder();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(keys.size());
        List<Thread> threads = new ArrayList<>();
        for (String key : keys) {
            threads.add(new Thread(() -> {
                try {
                    while (!stop.get()) {
                        operation.apply(key);
                        ops.increment();
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                    stop.set(true);
                } finally {
                    done.countDown();
                }
            }, "bench-" + name));
        }
        threads.forEach(Thread::start);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!stop.get() && System.nanoTime() < deadline) {
            Thread.sleep(Math.max(1, Math.min(50, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()))));
        }
        stop.set(true);
        done.await();
        if (failure.get() != null) {
            throw new IllegalStateException(name + " failed during a measured round", failure.get());
        }
        return ops.sum();
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
