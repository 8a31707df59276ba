package dev.dlock.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;

/**
 * Where the time of one lock + unlock pair goes on one thread: wall time, the Redis server's CPU (from
 * {@code INFO cpu}), the calling thread's CPU (Java code and its system calls), and the rest
 * (waiting for the other side to be scheduled and answer). Libraries run in alternating rounds on one Redis.
 * Run it under JFR for the Java side: {@code java -XX:StartFlightRecording=filename=one-thread.jfr -cp
 * benchmarks/target/dlock-benchmarks.jar dev.dlock.bench.OneThreadCosts [seconds per round] [rounds] [libraries]}, the
 * libraries comma-separated ids of {@code PeerLocks} (default {@code raw-jedis,dlock,dlock-direct}).
 */
public final class OneThreadCosts {

    private static final Logger log = LoggerFactory.getLogger(OneThreadCosts.class);
    private static final List<String> LIBRARIES = List.of("raw-jedis", "dlock", "dlock-direct");

    private OneThreadCosts() {
    }

    /** Entry point; arguments: seconds per round (default 5), rounds (default 4), libraries (default raw-jedis,dlock,dlock-direct). */
    public static void main(String[] args) throws Exception {
        long roundNanos = TimeUnit.SECONDS.toNanos(args.length > 0 ? Long.parseLong(args[0]) : 5);
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        List<String> ids = args.length > 2 ? List.of(args[2].split(",")) : LIBRARIES;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            System.setProperty(BenchRedis.PROPERTY, redis.uri());
            List<LockUnderTest> libraries = new ArrayList<>();
            for (String id : ids) {
                libraries.add(PeerLocks.open(id));
            }
            double[][] totals = new double[libraries.size()][4];
            long[] pairs = new long[libraries.size()];
            for (int round = -1; round < rounds; round++) {
                for (int i = 0; i < libraries.size(); i++) {
                    LockUnderTest library = libraries.get(i);
                    double serverBefore = serverCpuMicros(redis);
                    long cpuBefore = threads.getCurrentThreadCpuTime();
                    long start = System.nanoTime();
                    long done = 0;
                    while (System.nanoTime() - start < roundNanos) {
                        library.locked("one-thread", () -> null);
                        done++;
                    }
                    long wall = System.nanoTime() - start;
                    long cpu = threads.getCurrentThreadCpuTime() - cpuBefore;
                    double server = serverCpuMicros(redis) - serverBefore;
                    if (round >= 0) {
                        // Round -1 warms every library up and is not counted.
                        pairs[i] += done;
                        totals[i][0] += wall / 1e3;
                        totals[i][1] += server;
                        totals[i][2] += cpu / 1e3;
                    }
                }
            }
            StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                    "%n| library | pairs/s | wall µs / pair | Redis CPU µs / pair | caller CPU µs / pair | rest µs / pair |%n"
                            + "|---|---:|---:|---:|---:|---:|%n"));
            for (int i = 0; i < libraries.size(); i++) {
                double wall = totals[i][0] / pairs[i];
                double server = totals[i][1] / pairs[i];
                double caller = totals[i][2] / pairs[i];
                table.append(String.format(Locale.ROOT, "| %s | %,.0f | %.1f | %.1f | %.1f | %.1f |%n", libraries.get(i).name(),
                        pairs[i] / (totals[i][0] / 1e6), wall, server, caller, wall - server - caller));
            }
            log.info("One thread, {} rounds of {} s per library:{}", rounds, TimeUnit.NANOSECONDS.toSeconds(roundNanos), table);
            for (LockUnderTest library : libraries) {
                library.close();
            }
        }
    }

    /** The Redis server's CPU so far (user + system), in µs. */
    private static double serverCpuMicros(RedisServerProcess redis) {
        try (Jedis admin = redis.admin()) {
            return BenchRedis.serverCpuMicros(admin);
        }
    }
}
