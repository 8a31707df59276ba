package dev.dlock.bench;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Scenario 1 of {@link PeerBenchmarks} for the rows a fenced hold is judged by only: {@code raw-jedis}, {@code dlock},
 * {@code dlock-token} (the token read without saying so: issued at the first read) and {@code dlock-fenced} (issued with
 * the acquisition), in alternating rounds on a Redis it starts. A quick look at the fenced hold without the whole
 * peer run. Arguments: {@code rounds roundMillis threadCounts}, e.g. {@code 7 2000 1,64}.
 */
public final class FencedHoldRows {

    private static final Logger log = LoggerFactory.getLogger(FencedHoldRows.class);

    private FencedHoldRows() {
    }

    /** Entry point: {@code java -cp benchmarks/target/dlock-benchmarks.jar dev.dlock.bench.FencedHoldRows 7 2000 1,64}. */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        long roundMillis = args.length > 1 ? Long.parseLong(args[1]) : 2_000;
        int[] threadCounts = Arrays.stream((args.length > 2 ? args[2] : "1,64").split(",")).mapToInt(Integer::parseInt).toArray();
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            System.setProperty(BenchRedis.PROPERTY, redis.uri());
            List<LockUnderTest> libraries = new ArrayList<>();
            try {
                for (String id : List.of("raw-jedis", "dlock", "dlock-token", "dlock-fenced")) {
                    libraries.add(PeerLocks.open(id));
                }
                StringBuilder table = new StringBuilder("| library | threads | pairs/s | × raw Jedis | p50 µs | p99 µs |\n|---|---|---|---|---|---|\n");
                for (UncontendedPeers.Row row : UncontendedPeers.run(libraries, threadCounts, rounds, roundMillis)) {
                    table.append(String.format(Locale.ROOT, "| %s | %d | %,.0f | %.2f | %.0f | %.0f |%n", row.library(), row.threads(),
                            row.pairsPerSecond(), row.ratioToBaseline(), row.p50Micros(), row.p99Micros()));
                }
                log.info("Scenario 1, the fenced hold's rows ({} rounds of {} ms):\n{}", rounds, roundMillis, table);
            } finally {
                libraries.forEach(LockUnderTest::close);
            }
        }
    }
}
