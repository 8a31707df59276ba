package dev.dlock.bench;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import java.util.ArrayList;
import java.util.List;

/**
 * Scenario 1: lock + unlock on distinct keys (one per thread), every library in alternating rounds
 * on the same Redis; throughput as the median of rounds, its ratio to the raw Jedis baseline as the
 * median of per-round ratios, and per-pair latency p50/p99 over all measured rounds.
 */
final class UncontendedPeers {

    /** One library at one thread count; {@code roundPairsPerSecond} holds every measured round, in round order. */
    record Row(String library, int threads, double pairsPerSecond, double ratioToBaseline, double p50Micros, double p99Micros,
               double[] roundPairsPerSecond) {

        /** The median over rounds of this library's pairs/s over {@code other}'s in the same round (same thread count). */
        double medianRatioTo(Row other) {
            return InterleavedThroughput.Result.medianRatio(roundPairsPerSecond, other.roundPairsPerSecond);
        }
    }

    private static final int COUNTED_PAIRS = 1_000;

    private UncontendedPeers() {
    }

    /** Runs every library (the first is the baseline) at every thread count. */
    static List<Row> run(List<LockUnderTest> libraries, int[] threadCounts, int rounds, long roundMillis) throws InterruptedException {
        List<Row> rows = new ArrayList<>();
        for (int threads : threadCounts) {
            List<Recorder> recorders = new ArrayList<>();
            List<InterleavedThroughput.Variant> variants = new ArrayList<>();
            for (LockUnderTest library : libraries) {
                Recorder recorder = new Recorder(3);
                recorders.add(recorder);
                variants.add(new InterleavedThroughput.Variant(library.name(), key -> timedPair(library, key, recorder)));
            }
            InterleavedThroughput.Result result = InterleavedThroughput.measure(variants, threads, rounds, roundMillis,
                    () -> recorders.forEach(Recorder::reset));
            for (int i = 0; i < libraries.size(); i++) {
                Histogram latency = recorders.get(i).getIntervalHistogram();
                rows.add(new Row(libraries.get(i).name(), threads, result.medianOpsPerSecond()[i], result.medianRatioToFirst()[i],
                        latency.getValueAtPercentile(50) / 1e3, latency.getValueAtPercentile(99) / 1e3,
                        result.opsPerSecondByRound()[i]));
            }
        }
        return rows;
    }

    /**
     * Redis commands executed per lock + unlock pair (script-internal commands included), from
     * {@code INFO commandstats} around {@value #COUNTED_PAIRS} pairs on one thread.
     */
    static double commandsPerPair(RedisServerProcess redis, LockUnderTest library) throws Exception {
        long before = redis.totalCommandCalls();
        for (int i = 0; i < COUNTED_PAIRS; i++) {
            library.locked("counted:" + i, () -> null);
        }
        return (double) (redis.totalCommandCalls() - before) / COUNTED_PAIRS;
    }

    private static Object timedPair(LockUnderTest library, String key, Recorder recorder) {
        long start = System.nanoTime();
        Object result;
        try {
            result = library.locked(key, key::length);
        } catch (Exception e) {
            throw new IllegalStateException(library.name() + " failed on " + key, e);
        }
        recorder.recordValue(System.nanoTime() - start);
        return result;
    }
}
