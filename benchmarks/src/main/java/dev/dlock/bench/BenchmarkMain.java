package dev.dlock.bench;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Runs the core benchmarks against a Redis it starts itself and writes a Markdown report.
 * Arguments: {@code [--out FILE] [--threads 1,8,50] [--quick] [--cluster]}; {@code --cluster} runs only the
 * cluster comparison (1 master against 3 masters).
 */
public final class BenchmarkMain {

    private static final Logger log = LoggerFactory.getLogger(BenchmarkMain.class);

    private BenchmarkMain() {
    }

    /** Entry point of {@code java -jar benchmarks/target/dlock-benchmarks.jar}. */
    public static void main(String[] args) throws Exception {
        Path out = Path.of("benchmarks/target/benchmark-report.md");
        int[] threadCounts = {1, 8, 50};
        boolean quick = false;
        boolean cluster = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--out" -> out = Path.of(args[++i]);
                case "--threads" -> threadCounts = java.util.Arrays.stream(args[++i].split(",")).mapToInt(Integer::parseInt).toArray();
                case "--quick" -> quick = true;
                case "--cluster" -> cluster = true;
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        List<String> report = new ArrayList<>();
        if (cluster) {
            report.add("### Redis Cluster: dlock acquire + release, 1 master against 3 masters, keys spread over slots");
            report.add("");
            report.addAll(ClusterThroughput.measure(threadCounts, quick ? 3 : 7, quick ? 1_000 : 3_000));
            write(out, report);
            return;
        }
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            System.setProperty(BenchRedis.PROPERTY, redis.uri());
            report.add("Redis " + redis.version() + " (" + redis.binary() + "), " + Runtime.getRuntime().availableProcessors()
                    + " cores, JDK " + System.getProperty("java.version"));
            report.add("");
            report.add("### Uncontended acquire + release, distinct keys (ops/s, median of alternating rounds)");
            report.add("");
            report.add("| threads | raw Jedis | dlock backend only | dlock | dlock / raw (median of per-round ratios) |");
            report.add("|---|---|---|---|---|");
            try (LockPairs pairs = new LockPairs()) {
                List<InterleavedThroughput.Variant> variants = List.of(
                        new InterleavedThroughput.Variant("raw", pairs::rawJedis),
                        new InterleavedThroughput.Variant("backend", pairs::backendOnly),
                        new InterleavedThroughput.Variant("dlock", pairs::dlock));
                for (int threads : threadCounts) {
                    InterleavedThroughput.Result r = InterleavedThroughput.measure(variants, threads, quick ? 3 : 7, quick ? 1_000 : 3_000);
                    report.add(String.format(Locale.ROOT, "| %d | %,.0f | %,.0f | %,.0f | %.2f |", threads,
                            r.medianOpsPerSecond()[0], r.medianOpsPerSecond()[1], r.medianOpsPerSecond()[2], r.medianRatioToFirst()[2]));
                    log.info("{}", report.get(report.size() - 1));
                }
            }
            report.add("");
            report.add("### @DistributedLock overhead against the programmatic API, 8 threads (ops/s, median of alternating rounds)");
            report.add("");
            report.add("| threads | programmatic | annotation (proxy + SpEL) | annotation / programmatic |");
            report.add("|---|---|---|---|");
            InterleavedThroughput.Result aspect = AspectOverhead.measure(8, quick ? 3 : 7, quick ? 1_000 : 3_000);
            report.add(String.format(Locale.ROOT, "| 8 | %,.0f | %,.0f | %.3f |", aspect.medianOpsPerSecond()[0],
                    aspect.medianOpsPerSecond()[1], aspect.medianRatioToFirst()[1]));
            log.info("{}", report.get(report.size() - 1));
            report.add("");
            report.add("### Watchdog: 10,000 held leases (lease 3 s, renewed every 1 s, batch 100)");
            report.add("");
            WatchdogHarness.Result watchdog = WatchdogHarness.run(redis, 10_000, Duration.ofSeconds(3), quick ? 3 : 10);
            report.add("| leases | renew calls / round | EVALSHA / round (Redis) | watchdog CPU ms / round | heap bytes / held lock | lapses | renew errors |");
            report.add("|---|---|---|---|---|---|---|");
            report.add(String.format(Locale.ROOT, "| %,d | %.1f | %.1f | %.1f | %.0f | %d | %d |", watchdog.leases(),
                    watchdog.callsPerRound(), watchdog.evalshaPerRound(), watchdog.watchdogCpuMillisPerRound(),
                    watchdog.heapBytesPerLock(), watchdog.lapses(), watchdog.renewErrors()));
        }
        write(out, report);
    }

    private static void write(Path out, List<String> report) throws java.io.IOException {
        Files.createDirectories(out.toAbsolutePath().getParent());
        Files.write(out, report);
        log.info("Report written to {}:\n{}", out.toAbsolutePath(), String.join("\n", report));
    }
}
