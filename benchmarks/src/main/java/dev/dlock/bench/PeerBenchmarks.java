package dev.dlock.bench;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.ToDoubleFunction;
import java.util.stream.Collectors;

/**
 * dlock against Redisson, Spring Integration's RedisLockRegistry, lock4j and a raw Jedis baseline,
 * every library against the same Redis (started here) in the same run. Writes a Markdown report and
 * PNG charts. Arguments: {@code [--quick] [--out-dir DIR] [--scenarios 1,2,3,4]}.
 */
public final class PeerBenchmarks {

    private static final Logger log = LoggerFactory.getLogger(PeerBenchmarks.class);

    private static final List<String> UNCONTENDED = List.of("raw-jedis", "dlock", "dlock-annotation", "redisson",
            "redisson-pool128", "rlr-spin", "rlr-pubsub", "lock4j");
    private static final List<String> HOT_KEY = List.of("raw-jedis", "dlock", "redisson", "rlr-spin", "rlr-pubsub", "lock4j");
    private static final List<String> RENEWING = List.of("dlock", "redisson", "rlr-renewing");
    private static final List<String> HEAP_ONLY = List.of("rlr-spin", "lock4j");

    private final boolean quick;
    private final Path outDir;
    private final Path workDir;
    private final List<String> report = new ArrayList<>();
    private final List<String> verdicts = new ArrayList<>();

    private PeerBenchmarks(boolean quick, Path outDir) throws java.io.IOException {
        this.quick = quick;
        this.outDir = outDir;
        this.workDir = Files.createTempDirectory("dlock-peer-benchmarks-");
        log.info("Child JVM logs and samples go to {}", workDir);
    }

    /** Entry point: {@code java -cp benchmarks/target/dlock-benchmarks.jar dev.dlock.bench.PeerBenchmarks}. */
    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Path outDir = Path.of("benchmarks/target/peer-benchmarks");
        Set<String> scenarios = Set.of("1", "2", "3", "4");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--out-dir" -> outDir = Path.of(args[++i]);
                case "--scenarios" -> scenarios = Set.of(args[++i].split(","));
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; known: --quick, --out-dir DIR, --scenarios 1,2,3,4,5,6");
            }
        }
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(outDir);
        new PeerBenchmarks(quick, outDir).runAll(scenarios);
    }

    private void runAll(Set<String> scenarios) throws Exception {
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            System.setProperty(BenchRedis.PROPERTY, redis.uri());
            var os = ManagementFactory.getOperatingSystemMXBean();
            report.add(String.format(Locale.ROOT, "Run on %s: %d cores, %s, Redis %s, JDK %s%s; load average at start %.1f.",
                    LocalDate.now(), Runtime.getRuntime().availableProcessors(), memory(), redis.version(),
                    System.getProperty("java.version"), quick ? ", **--quick** (short rounds, fewer leases)" : "",
                    os.getSystemLoadAverage()));
            report.add("");
            report.add("| library | what runs |");
            report.add("|---|---|");
            for (String id : PeerLocks.ids()) {
                report.add("| `" + id + "` | " + PeerLocks.describe(id) + " |");
            }
            report.add("");
            if (scenarios.contains("1")) {
                uncontended(redis);
            }
            if (scenarios.contains("2")) {
                hotKey(redis);
            }
            if (scenarios.contains("3") || scenarios.contains("4")) {
                heldLeases(redis);
            }
            if (scenarios.contains("5")) {
                threadPerLock(redis);
            }
            if (scenarios.contains("6")) {
                fairAgainstUnfair(redis);
            }
            report.add(String.format(Locale.ROOT, "Load average at the end: %.1f.", os.getSystemLoadAverage()));
            report.add("");
            report.add("### Targets");
            report.add("");
            report.addAll(verdicts);
        }
        String suffix = scenarios.containsAll(Set.of("1", "2", "3", "4")) ? "" : "-" + String.join("-", new java.util.TreeSet<>(scenarios));
        Path file = outDir.resolve("peer-report" + suffix + ".md");
        Files.write(file, report);
        log.info("Report and charts written to {}:\n{}", outDir.toAbsolutePath(), String.join("\n", report));
    }

    // ---------------------------------------------------------------- scenario 1

    private void uncontended(RedisServerProcess redis) throws Exception {
        int[] threadCounts = {1, 8, 64};
        List<LockUnderTest> libraries = new ArrayList<>();
        List<UncontendedPeers.Row> rows;
        Map<String, Double> commandsPerPair = new LinkedHashMap<>();
        try {
            for (String id : UNCONTENDED) {
                libraries.add(PeerLocks.open(id));
            }
            rows = UncontendedPeers.run(libraries, threadCounts, quick ? 3 : 5, quick ? 1_000 : 2_000);
            for (LockUnderTest library : libraries) {
                commandsPerPair.put(library.name(), UncontendedPeers.commandsPerPair(redis, library));
            }
        } finally {
            libraries.forEach(LockUnderTest::close);
        }
        report.add("### 1. Uncontended lock + unlock, distinct keys");
        report.add("");
        report.add("Pairs per second (median of alternating rounds), ratio to raw Jedis (median of per-round ratios), "
                + "and latency of one lock + unlock pair.");
        report.add("");
        report.add("| library | threads | pairs/s | × raw Jedis | p50 µs | p99 µs | Redis commands / pair |");
        report.add("|---|---|---|---|---|---|---|");
        for (UncontendedPeers.Row row : rows) {
            report.add(String.format(Locale.ROOT, "| %s | %d | %,.0f | %.2f | %.0f | %.0f | %.1f |", row.library(), row.threads(),
                    row.pairsPerSecond(), row.ratioToBaseline(), row.p50Micros(), row.p99Micros(),
                    commandsPerPair.get(row.library())));
        }
        report.add("");
        logSince("Scenario 1");
        List<String> categories = Arrays.stream(threadCounts).mapToObj(threads -> threads + " threads").toList();
        PeerCharts.bars(outDir.resolve("uncontended-throughput.png"), "Uncontended lock + unlock (pairs/s)", "",
                "pairs/s", categories, byLibrary(rows, UncontendedPeers.Row::library, UncontendedPeers.Row::pairsPerSecond));
        PeerCharts.bars(outDir.resolve("uncontended-p99.png"), "Uncontended lock + unlock, p99 latency (µs)", "",
                "µs", categories, byLibrary(rows, UncontendedPeers.Row::library, UncontendedPeers.Row::p99Micros));
        report.add("![uncontended throughput](uncontended-throughput.png)");
        report.add("![uncontended p99](uncontended-p99.png)");
        report.add("");
        for (int threads : threadCounts) {
            double dlock = ratio(rows, "dlock", threads);
            verdict(String.format(Locale.ROOT, "Scenario 1, %d threads: dlock ≥ 0.9× raw Jedis", threads), dlock, 0.9);
            if (threads > 1) {
                verdict(String.format(Locale.ROOT, "Scenario 1, %d threads: dlock ≥ 3× Redisson (defaults)", threads),
                        dlock / ratio(rows, "redisson", threads), 3);
                double bestRegistry = Math.max(ratio(rows, "rlr-spin", threads), ratio(rows, "rlr-pubsub", threads));
                verdict(String.format(Locale.ROOT, "Scenario 1, %d threads: dlock ≥ %.1f× RedisLockRegistry (its better mode)",
                        threads, threads == 8 ? 1.3 : 1.0), dlock / bestRegistry, threads == 8 ? 1.3 : 1.0);
            }
        }
    }

    private static double ratio(List<UncontendedPeers.Row> rows, String library, int threads) {
        return rows.stream().filter(row -> row.library().equals(library) && row.threads() == threads)
                .findFirst().orElseThrow().ratioToBaseline();
    }

    // ---------------------------------------------------------------- scenario 2

    private void hotKey(RedisServerProcess redis) throws Exception {
        int threadsPerJvm = 32;
        List<HotKeyPeers.Row> rows = new ArrayList<>();
        for (String id : HOT_KEY) {
            log.info("Hot key: {}", id);
            rows.add(HotKeyPeers.run(redis, id, threadsPerJvm, quick ? 3_000 : 15_000, workDir));
        }
        report.add("### 2. One hot key, 2 JVMs × 32 threads");
        report.add("");
        report.add("Hand-offs per second; gap from one release to the next acquire (both JVMs merged on the system's "
                + "monotonic clock); Redis commands executed per hand-off (`INFO commandstats`, script-internal commands "
                + "included); fewest / most acquisitions of any of the 64 threads; overlaps (two holders at once, must be 0).");
        report.add("");
        hotKeyTable("library", rows);
        report.add("");
        logSince("Scenario 2");
        List<String> libraries = rows.stream().map(HotKeyPeers.Row::library).toList();
        PeerCharts.bars(outDir.resolve("hot-key-handoffs.png"), "One hot key, 2 JVMs x 32 threads: hand-offs/s", "", "hand-offs/s",
                List.of("hand-offs/s"), single(rows, HotKeyPeers.Row::library, HotKeyPeers.Row::handOffsPerSecond));
        PeerCharts.bars(outDir.resolve("hot-key-commands.png"), "One hot key: Redis commands per hand-off", "", "commands",
                List.of("commands per hand-off"), single(rows, HotKeyPeers.Row::library, HotKeyPeers.Row::commandsPerHandOff));
        report.add("![hot key hand-offs](hot-key-handoffs.png)");
        report.add("![hot key commands](hot-key-commands.png)");
        report.add("");
        HotKeyPeers.Row dlock = find(rows, HotKeyPeers.Row::library, "dlock");
        HotKeyPeers.Row redisson = find(rows, HotKeyPeers.Row::library, "redisson");
        verdict("Scenario 2: dlock hand-offs/s ≥ 1.2× Redisson", dlock.handOffsPerSecond() / redisson.handOffsPerSecond(), 1.2);
        verdictAtMost("Scenario 2: dlock Redis commands per hand-off ≤ 1/3 of Redisson's",
                dlock.commandsPerHandOff() / redisson.commandsPerHandOff(), 1.0 / 3);
        verdict("Scenario 2: no dlock thread starved (fewest/most ≥ 0.5), 2 JVMs", dlock.fairness(), 0.5);
        verdictAtMost("Scenario 2: dlock overlaps", dlock.overlaps(), 0);
        log.info("Hot key libraries done: {}", libraries);
    }

    /** One row per hot-key run: hand-offs, gaps, commands, fairness, overlaps. */
    private void hotKeyTable(String firstColumn, List<HotKeyPeers.Row> rows) {
        report.add("| " + firstColumn + " | hand-offs/s | gap p50 µs | gap p99 µs | Redis commands / hand-off | fewest / most per thread | overlaps |");
        report.add("|---|---|---|---|---|---|---|");
        for (HotKeyPeers.Row row : rows) {
            report.add(String.format(Locale.ROOT, "| %s | %,.0f | %.0f | %.0f | %.1f | %d / %d (%.2f) | %d |", row.library(),
                    row.handOffsPerSecond(), row.gapP50Micros(), row.gapP99Micros(), row.commandsPerHandOff(),
                    row.minPerThread(), row.maxPerThread(), row.fairness(), row.overlaps()));
        }
    }

    // ---------------------------------------------------------------- scenario 6

    /** What FIFO order across JVMs costs per hand-off: the fair lock against the exclusive one on one hot key. */
    private void fairAgainstUnfair(RedisServerProcess redis) throws Exception {
        int threadsPerJvm = 8;
        List<HotKeyPeers.Row> rows = new ArrayList<>();
        for (String id : List.of("dlock", "dlock-fair")) {
            log.info("Fair against unfair: {}", id);
            rows.add(HotKeyPeers.run(redis, id, threadsPerJvm, quick ? 3_000 : 15_000, workDir));
        }
        report.add("### 6. Fair against exclusive: one hot key, 2 JVMs × 8 threads");
        report.add("");
        hotKeyTable("lock", rows);
        report.add("");
    }

    // ---------------------------------------------------------------- scenario 5

    /** One renewal thread per held lock against dlock's one watchdog, at 10,000 held locks. */
    private void threadPerLock(RedisServerProcess redis) throws Exception {
        int holdSeconds = quick ? 12 : 30;
        List<HeldLeasesPeers.Row> rows = new ArrayList<>();
        for (String id : List.of("dlock", "thread-per-lock")) {
            log.info("Renewal threads: {} x 10,000 for {} s", id, holdSeconds);
            rows.add(HeldLeasesPeers.run(redis, id, 10_000, holdSeconds, workDir));
        }
        report.add(String.format(Locale.ROOT, "### 5. A renewal thread per lock against one watchdog: 10,000 locks held for %d s", holdSeconds));
        report.add("");
        report.add("Each in a fresh child JVM: live threads and resident memory once the locks are held, heap per lock, "
                + "Redis commands per second and CPU while only holding, lapses at the end.");
        report.add("");
        report.add("| design | live threads | resident MiB | heap bytes per lock | Redis commands/s | JVM CPU ms/s | renewal threads CPU ms/s | lapses |");
        report.add("|---|---|---|---|---|---|---|---|");
        for (HeldLeasesPeers.Row row : rows) {
            report.add(String.format(Locale.ROOT, "| %s | %,d | %,.0f | %,.0f | %,.1f | %.1f | %.1f | %d |", row.library(), row.liveThreads(),
                    row.residentMiB(), row.heapBytesPerLock(), row.commandsPerSecond(), row.processCpuMillisPerSecond(),
                    row.renewalThreadCpuMillisPerSecond(), row.lapses()));
        }
        report.add("");
    }

    // ---------------------------------------------------------------- scenarios 3 and 4

    private void heldLeases(RedisServerProcess redis) throws Exception {
        List<Integer> counts = quick ? List.of(1_000, 10_000) : List.of(1_000, 10_000, 100_000);
        int holdSeconds = quick ? 12 : 60;
        List<HeldLeasesPeers.Row> rows = new ArrayList<>();
        for (int leases : counts) {
            for (String id : RENEWING) {
                log.info("Held leases: {} x {} for {} s", id, leases, holdSeconds);
                rows.add(HeldLeasesPeers.run(redis, id, leases, holdSeconds, workDir));
            }
        }
        List<HeldLeasesPeers.Row> heapRows = new ArrayList<>(rows.stream().filter(row -> row.leases() == 10_000).toList());
        for (String id : HEAP_ONLY) {
            log.info("Heap per lock: {} x 10,000", id);
            heapRows.add(HeldLeasesPeers.run(redis, id, 10_000, 1, workDir));
        }
        report.add(String.format(Locale.ROOT, "### 3. Held leases kept alive for %d s", holdSeconds));
        report.add("");
        report.add("Each library in a fresh child JVM. Redis commands per second while only holding (script-internal "
                + "commands included), top-level script calls per 100 leases per 10 s (the renewal round of dlock and Redisson; "
                + "RedisLockRegistry renews every 20 s), CPU of the whole "
                + "JVM and of the library's renewal threads (ms of CPU per second of holding), and lapses: held keys "
                + "missing from Redis at the end.");
        report.add("");
        report.add("| library | leases | Redis commands/s | script calls / 100 leases / 10 s | JVM CPU ms/s | renewal threads CPU ms/s | lapses | acquiring took s | busiest commands |");
        report.add("|---|---|---|---|---|---|---|---|---|");
        for (HeldLeasesPeers.Row row : rows) {
            report.add(String.format(Locale.ROOT, "| %s | %,d | %,.1f | %.2f | %.1f | %.1f | %d | %.1f | %s |", row.library(), row.leases(),
                    row.commandsPerSecond(), row.callsPer100LeasesPerRound(), row.processCpuMillisPerSecond(),
                    row.renewalThreadCpuMillisPerSecond(), row.lapses(), row.acquireSeconds(), row.busiestCommands()));
        }
        report.add("");
        report.add("### 4. Heap per held lock");
        report.add("");
        report.add("(used heap after GC with 10,000 locks held − before) / 10,000, in a fresh JVM per library; the "
                + "handles the caller keeps are included.");
        report.add("");
        report.add("| library | bytes per held lock |");
        report.add("|---|---|");
        for (HeldLeasesPeers.Row row : heapRows) {
            report.add(String.format(Locale.ROOT, "| %s | %,.0f |", row.library(), row.heapBytesPerLock()));
        }
        report.add("");
        logSince("Scenarios 3 and 4");
        List<String> categories = counts.stream().map(leases -> String.format(Locale.ROOT, "%,d leases", leases)).toList();
        PeerCharts.bars(outDir.resolve("held-leases-commands.png"), "Held leases: Redis commands per second", "",
                "commands/s", categories, byLibrary(rows, HeldLeasesPeers.Row::library, HeldLeasesPeers.Row::commandsPerSecond));
        PeerCharts.bars(outDir.resolve("held-leases-cpu.png"), "Held leases: JVM CPU ms per second", "",
                "CPU ms/s", categories, byLibrary(rows, HeldLeasesPeers.Row::library, HeldLeasesPeers.Row::processCpuMillisPerSecond));
        PeerCharts.bars(outDir.resolve("heap-per-lock.png"), "Heap per held lock (bytes, 10,000 held)", "", "bytes",
                List.of("bytes per held lock"), single(heapRows, HeldLeasesPeers.Row::library, HeldLeasesPeers.Row::heapBytesPerLock));
        report.add("![held leases commands](held-leases-commands.png)");
        report.add("![held leases cpu](held-leases-cpu.png)");
        report.add("![heap per lock](heap-per-lock.png)");
        report.add("");
        for (int leases : counts) {
            HeldLeasesPeers.Row dlock = rows.stream().filter(r -> r.library().equals("dlock") && r.leases() == leases).findFirst().orElseThrow();
            HeldLeasesPeers.Row redisson = rows.stream().filter(r -> r.library().equals("redisson") && r.leases() == leases).findFirst().orElseThrow();
            String at = String.format(Locale.ROOT, "Scenario 3, %,d leases: ", leases);
            // A window of k rounds' length can hold k + 1 renewal ticks, so one round's calls of slack.
            double rounds = holdSeconds / 10.0;
            verdictAtMost(at + String.format(Locale.ROOT, "dlock script calls per 100 leases per 10 s round ≤ 1 (≤ %.2f with the "
                    + "window-edge round)", (rounds + 1) / rounds), dlock.callsPer100LeasesPerRound(), (rounds + 1) / rounds);
            verdictAtMost(at + "dlock JVM CPU ≤ Redisson's (ratio)", dlock.processCpuMillisPerSecond() / redisson.processCpuMillisPerSecond(), 1);
            for (String id : RENEWING) {
                HeldLeasesPeers.Row row = rows.stream().filter(r -> r.library().equals(id) && r.leases() == leases).findFirst().orElseThrow();
                verdictAtMost(at + id + " lapses", row.lapses(), 0);
            }
        }
        HeldLeasesPeers.Row dlockHeap = find(heapRows, HeldLeasesPeers.Row::library, "dlock");
        HeldLeasesPeers.Row redissonHeap = find(heapRows, HeldLeasesPeers.Row::library, "redisson");
        verdictAtMost("Scenario 4: dlock bytes per held lock ≤ 1 KiB", dlockHeap.heapBytesPerLock(), 1024);
        verdictAtMost("Scenario 4: dlock heap per lock ≤ Redisson's (ratio)", dlockHeap.heapBytesPerLock() / redissonHeap.heapBytesPerLock(), 1);
    }

    // ---------------------------------------------------------------- helpers

    private int logged;

    /** Logs the report lines added since the last call, so a failure later does not lose them. */
    private void logSince(String what) {
        log.info("{}:\n{}", what, String.join("\n", report.subList(logged, report.size())));
        logged = report.size();
    }

    private static <R> Map<String, List<Double>> byLibrary(List<R> rows, java.util.function.Function<R, String> library,
                                                           ToDoubleFunction<R> value) {
        Map<String, List<Double>> series = new LinkedHashMap<>();
        for (R row : rows) {
            series.computeIfAbsent(library.apply(row), ignored -> new ArrayList<>()).add(value.applyAsDouble(row));
        }
        return series;
    }

    private static <R> Map<String, List<Double>> single(List<R> rows, java.util.function.Function<R, String> library,
                                                        ToDoubleFunction<R> value) {
        return rows.stream().collect(Collectors.toMap(library, row -> List.of(value.applyAsDouble(row)),
                (a, b) -> a, LinkedHashMap::new));
    }

    private static <R> R find(List<R> rows, java.util.function.Function<R, String> library, String id) {
        return rows.stream().filter(row -> library.apply(row).equals(id)).findFirst().orElseThrow();
    }

    private void verdict(String target, double measured, double atLeast) {
        verdicts.add(String.format(Locale.ROOT, "- %s: %.2f — **%s**", target, measured, measured >= atLeast ? "met" : "missed"));
    }

    private void verdictAtMost(String target, double measured, double atMost) {
        verdicts.add(String.format(Locale.ROOT, "- %s: %.2f — **%s**", target, measured, measured <= atMost ? "met" : "missed"));
    }

    private static String memory() {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        return String.format(Locale.ROOT, "%.0f GiB RAM", os.getTotalMemorySize() / (1024.0 * 1024 * 1024));
    }
}
