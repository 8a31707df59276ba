package dev.dlock.bench;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.UUID;

/**
 * JMH view of {@link LockPairs}: uncontended acquire + release on distinct keys (one per thread),
 * for ad-hoc runs with JMH's profilers ({@code -prof gc}). The report uses {@link InterleavedThroughput}.
 */
public class AcquireReleaseBenchmark {

    /** Clients shared by all benchmark threads. */
    @State(Scope.Benchmark)
    public static class Clients {
        LockPairs pairs;

        /** Connects to the harness's Redis. */
        @Setup(Level.Trial)
        public void connect() {
            pairs = new LockPairs();
        }

        /** Closes the clients. */
        @TearDown(Level.Trial)
        public void close() {
            pairs.close();
        }
    }

    /** The key of one benchmark thread. */
    @State(Scope.Thread)
    public static class ThreadKey {
        final String key = "bench:" + UUID.randomUUID();
    }

    /** dlock's programmatic API. */
    @Benchmark
    public boolean dlock(Clients clients, ThreadKey thread) {
        return clients.pairs.dlock(thread.key);
    }

    /** dlock's programmatic API, reading the fencing token in each hold. */
    @Benchmark
    public long dlockReadingToken(Clients clients, ThreadKey thread) {
        return clients.pairs.dlockReadingToken(thread.key);
    }

    /** The Redis backend without the engine. */
    @Benchmark
    public Object backendOnly(Clients clients, ThreadKey thread) {
        return clients.pairs.backendOnly(thread.key);
    }

    /** The raw Jedis baseline. */
    @Benchmark
    public Object rawJedis(Clients clients, ThreadKey thread) {
        return clients.pairs.rawJedis(thread.key);
    }
}
