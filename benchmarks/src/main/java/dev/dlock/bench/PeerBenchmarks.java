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
 * dlock against Redisson, Spring Integration's RedisLockRegistry, lock4j, ShedLock and a raw Jedis
 * baseline, every library against the same Redis (started here) in the same run. Writes a Markdown
 * report and PNG charts. Arguments: {@code [--quick] [--out-dir DIR] [--scenarios 1,2,3,4,5,6]};
 * {@code --scenarios targets} runs scenarios 1 and 2, everything the speed targets are measured on.
 */
public final class PeerBenchmarks {

    private static final Logger log = LoggerFactory.getLogger(PeerBenchmarks.class);

    private static final List<String> UNCONTENDED = List.of("raw-jedis", "dlock", "dlock-token", "dlock-fenced", "dlock-direct",
            "dlock-annotation", "redisson",
            "redisson-pool128", "rlr-spin", "rlr-pubsub", "lock4j", "shedlock");
    private static final List<String> HOT_KEY = List.of("raw-jedis", "dlock", "dlock-fenced", "dlock-no-handoff", "redisson", "rlr-spin",
            "rlr-pubsub", "lock4j", "shedlock-spin");
    /** The hot key's shapes, {JVMs, threads per JVM}: the same 16 threads in one JVM and split over two. */
    private static final int[][] HOT_KEY_SHAPES = {{1, 16}, {2, 8}};
    /** The scenario id that runs scenarios 1 and 2, which together measure every speed target. */
    private static final String TARGETS = "targets";
    private static final List<String> RENEWING = List.of("dlock", "redisson", "rlr-renewing");
    private static final List<String> HEAP_ONLY = List.of("rlr-spin", "lock4j");

    private final boolean quick;
    /** The libraries to run ({@code --only}); null for all. The baselines the targets compare with always run. */
    private Set<String> only;
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
        Set<String> only = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--out-dir" -> outDir = Path.of(args[++i]);
                case "--scenarios" -> scenarios = Set.of(args[++i].split(","));
                case "--only" -> only = Set.of(args[++i].split(","));
                default -> throw new IllegalArgumentException("unknown argument " + args[i]
                        + "; known: --quick, --out-dir DIR, --scenarios 1,2,3,4,5,6 (targets = 1 and 2, the speed targets), "
                        + "--only LIBRARY,... (scenarios 1 and 2: these and the baselines)");
            }
        }
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(outDir);
        PeerBenchmarks benchmarks = new PeerBenchmarks(quick, outDir);
        benchmarks.only = only;
        benchmarks.runAll(scenarios);
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
            if (scenarios.contains("1") || scenarios.contains(TARGETS)) {
                uncontended(redis);
            }
            if (scenarios.contains("2") || scenarios.contains(TARGETS)) {
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
            boolean speedTargets = scenarios.contains("1") || scenarios.contains("2") || scenarios.contains(TARGETS);
            boolean earlier = scenarios.contains("3") || scenarios.contains("4");
            report.add((speedTargets ? "Scenarios 1 and 2 are checked against the speed targets" : "")
                    + (speedTargets && earlier ? ", scenarios 3 and 4 against the earlier ones" : earlier
                    ? "Scenarios 3 and 4 are checked against their targets" : "")
                    + ". Every figure is from this run.");
            report.add("");
            report.add("| target | measured | |");
            report.add("|---|---|---|");
            report.addAll(verdicts);
            report.add("");
        }
        String suffix = scenarios.containsAll(Set.of("1", "2", "3", "4")) ? ""
                : scenarios.equals(Set.of(TARGETS)) ? "-targets"
                : "-" + String.join("-", new java.util.TreeSet<>(scenarios));
        Path file = outDir.resolve("peer-report" + suffix + ".md");
        Files.write(file, report);
        log.info("Report and charts written to {}:\n{}", outDir.toAbsolutePath(), String.join("\n", report));
    }

    /** {@code ids} narrowed to {@code --only}, keeping raw Jedis and Redisson, which the targets compare with. */
    private List<String> selected(List<String> ids) {
        return only == null ? ids : ids.stream().filter(id -> only.contains(id) || id.equals("raw-jedis") || id.equals("redisson")).toList();
    }

    // ---------------------------------------------------------------- scenario 1

    private void uncontended(RedisServerProcess redis) throws Exception {
        int[] threadCounts = {1, 8, 64};
        List<LockUnderTest> libraries = new ArrayList<>();
        List<UncontendedPeers.Row> rows;
        Map<String, Double> commandsPerPair = new LinkedHashMap<>();
        try {
            for (String id : selected(UNCONTENDED)) {
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
        speedTargetsUncontended(rows, threadCounts);
    }

    /**
     * The uncontended speed targets, each dlock ratio the median of per-round ratios to the peer in the same rounds. A
     * target whose rows did not run ({@code --only}) is left out.
     */
    private void speedTargetsUncontended(List<UncontendedPeers.Row> rows, int[] threadCounts) {
        for (int threads : threadCounts) {
            String at = String.format(Locale.ROOT, "1, %d thread%s: ", threads, threads == 1 ? "" : "s");
            UncontendedPeers.Row dlock = row(rows, "dlock", threads);
            UncontendedPeers.Row raw = row(rows, "raw-jedis", threads);
            if (dlock != null) {
                double toRaw = dlock.medianRatioTo(raw);
                double rawTarget = threads == 1 ? 1.0 : 1.3;
                verdict(at + String.format(Locale.ROOT, "dlock ≥ %.1f× raw Jedis", rawTarget),
                        pairs(dlock, raw, toRaw), toRaw >= rawTarget);
                UncontendedPeers.Row spin = row(rows, "rlr-spin", threads);
                UncontendedPeers.Row pubSub = row(rows, "rlr-pubsub", threads);
                if (threads > 1 && spin != null && pubSub != null) {
                    UncontendedPeers.Row registry = dlock.medianRatioTo(spin) <= dlock.medianRatioTo(pubSub) ? spin : pubSub;
                    double toRegistry = dlock.medianRatioTo(registry);
                    verdict(at + "dlock ≥ 1.3× RedisLockRegistry (its faster mode here)", pairs(dlock, registry, toRegistry),
                            toRegistry >= 1.3);
                }
                UncontendedPeers.Row redisson = row(rows, "redisson", threads);
                double toRedisson = dlock.medianRatioTo(redisson);
                verdict(at + "dlock ≥ 3× Redisson (defaults)", pairs(dlock, redisson, toRedisson), toRedisson >= 3);
            }
            // A fenced hold: the lock a guarded resource needs, its token read once per hold.
            UncontendedPeers.Row fenced = row(rows, "dlock-fenced", threads);
            if (fenced != null && (threads == 1 || threads == 64)) {
                double fencedToRaw = fenced.medianRatioTo(raw);
                double fencedTarget = threads == 1 ? 0.9 : 1.0;
                verdict(at + String.format(Locale.ROOT, "dlock-fenced ≥ %.1f× raw Jedis", fencedTarget),
                        pairs(fenced, raw, fencedToRaw), fencedToRaw >= fencedTarget);
            }
        }
        UncontendedPeers.Row dlock = row(rows, "dlock", 1);
        UncontendedPeers.Row raw = row(rows, "raw-jedis", 1);
        if (dlock != null) {
            verdict("1, 1 thread: dlock p99 ≤ raw Jedis p99 + 20 %", String.format(Locale.ROOT, "%.0f µs vs %.0f µs: %+.0f %%",
                    dlock.p99Micros(), raw.p99Micros(), (dlock.p99Micros() / raw.p99Micros() - 1) * 100),
                    dlock.p99Micros() <= raw.p99Micros() * 1.2);
        }
    }

    private static String pairs(UncontendedPeers.Row row, UncontendedPeers.Row other, double ratio) {
        return String.format(Locale.ROOT, "%,.0f vs %s %,.0f pairs/s (medians): %.2f×", row.pairsPerSecond(), other.library(),
                other.pairsPerSecond(), ratio);
    }

    /** The row of {@code library} at {@code threads}, or null when it did not run. */
    private static UncontendedPeers.Row row(List<UncontendedPeers.Row> rows, String library, int threads) {
        return rows.stream().filter(row -> row.library().equals(library) && row.threads() == threads)
                .findFirst().orElse(null);
    }

    // ---------------------------------------------------------------- scenario 2

    private void hotKey(RedisServerProcess redis) throws Exception {
        long millis = quick ? 3_000 : 15_000;
        List<HotKeyPeers.Row> rows = new ArrayList<>();
        for (int[] shape : HOT_KEY_SHAPES) {
            for (String id : selected(HOT_KEY)) {
                log.info("Hot key, {}: {}", HotKeyPeers.shape(shape[0], shape[1]), id);
                rows.add(HotKeyPeers.run(redis, id, shape[0], shape[1], millis, workDir));
            }
        }
        report.add("### 2. One hot key: 1 JVM × 16 threads, and 2 JVMs × 8 threads");
        report.add("");
        report.add(String.format(Locale.ROOT, "%.0f s per library and shape, after a 1 s warm-up. Hand-offs per second, and as a "
                + "ratio to raw Jedis's (which spins every 1 ms) and to Redisson's in the same shape; gap from one release to the "
                + "next acquire (both JVMs merged on the system's monotonic clock); Redis commands executed per hand-off "
                + "(`INFO commandstats`, script-internal commands included); fewest / most acquisitions of any thread; "
                + "overlaps (two holders at once, must be 0). With 2 JVMs also each JVM's share of the acquisitions "
                + "(this JVM / the child) and the longest run of consecutive acquisitions by one JVM, both counted while both "
                + "JVMs acquire.", millis / 1e3));
        report.add("");
        for (int[] shape : HOT_KEY_SHAPES) {
            String name = HotKeyPeers.shape(shape[0], shape[1]);
            report.add("#### " + name);
            report.add("");
            hotKeyTable("library", rows.stream().filter(row -> row.shape().equals(name)).toList(), true);
            report.add("");
        }
        logSince("Scenario 2");
        List<String> shapes = Arrays.stream(HOT_KEY_SHAPES).map(shape -> HotKeyPeers.shape(shape[0], shape[1])).toList();
        PeerCharts.bars(outDir.resolve("hot-key-handoffs.png"), "One hot key: hand-offs/s", "", "hand-offs/s",
                shapes, byLibrary(rows, HotKeyPeers.Row::library, HotKeyPeers.Row::handOffsPerSecond));
        PeerCharts.bars(outDir.resolve("hot-key-commands.png"), "One hot key: Redis commands per hand-off", "", "commands",
                shapes, byLibrary(rows, HotKeyPeers.Row::library, HotKeyPeers.Row::commandsPerHandOff));
        PeerCharts.bars(outDir.resolve("hot-key-fairness.png"), "One hot key: fewest / most acquisitions per thread", "",
                "fewest / most", shapes, byLibrary(rows, HotKeyPeers.Row::library, HotKeyPeers.Row::fairness));
        List<HotKeyPeers.Row> twoJvms = rows.stream().filter(row -> row.jvms() == 2).toList();
        PeerCharts.bars(outDir.resolve("hot-key-longest-run.png"), "One hot key, 2 JVMs: longest run of acquisitions by one JVM",
                "", "acquisitions", List.of(twoJvms.get(0).shape()),
                single(twoJvms, HotKeyPeers.Row::library, row -> row.longestJvmRun()));
        report.add("![hot key hand-offs](hot-key-handoffs.png)");
        report.add("![hot key commands](hot-key-commands.png)");
        report.add("![hot key fairness](hot-key-fairness.png)");
        report.add("![hot key longest same-JVM run](hot-key-longest-run.png)");
        report.add("");
        for (String shape : shapes) {
            speedTargetsHotKey(rows.stream().filter(row -> row.shape().equals(shape)).toList());
        }
    }

    /** The hot-key speed targets for one shape; none when {@code dlock} did not run ({@code --only}). */
    private void speedTargetsHotKey(List<HotKeyPeers.Row> rows) {
        if (rows.stream().noneMatch(row -> row.library().equals("dlock"))) {
            return;
        }
        HotKeyPeers.Row dlock = find(rows, HotKeyPeers.Row::library, "dlock");
        HotKeyPeers.Row raw = find(rows, HotKeyPeers.Row::library, "raw-jedis");
        HotKeyPeers.Row redisson = find(rows, HotKeyPeers.Row::library, "redisson");
        String at = "2, " + dlock.shape() + ": ";
        double toRaw = dlock.handOffsPerSecond() / raw.handOffsPerSecond();
        verdict(at + "dlock ≥ 1.2× raw Jedis's hand-offs/s", handOffs(dlock, raw, toRaw), toRaw >= 1.2);
        double toRedisson = dlock.handOffsPerSecond() / redisson.handOffsPerSecond();
        verdict(at + "dlock ≥ 2.5× Redisson's hand-offs/s", handOffs(dlock, redisson, toRedisson), toRedisson >= 2.5);
        verdict(at + "dlock ≤ 4 Redis commands per hand-off", String.format(Locale.ROOT, "%.2f", dlock.commandsPerHandOff()),
                dlock.commandsPerHandOff() <= 4);
        verdict(at + "dlock fewest / most acquisitions per thread ≥ 0.5", String.format(Locale.ROOT, "%d / %d: %.2f",
                dlock.minPerThread(), dlock.maxPerThread(), dlock.fairness()), dlock.fairness() >= 0.5);
        verdict(at + "dlock overlaps = 0", Long.toString(dlock.overlaps()), dlock.overlaps() == 0);
        if (dlock.jvms() > 1) {
            verdicts.add(String.format(Locale.ROOT, "| %sdlock: the other JVM is not starved by local hand-offs | "
                            + "JVM shares %s, longest run by one JVM %,d (raw Jedis: %s, %,d) | reported (no number is set) |",
                    at, shares(dlock), dlock.longestJvmRun(), shares(raw), raw.longestJvmRun()));
        }
    }

    private static String handOffs(HotKeyPeers.Row row, HotKeyPeers.Row other, double ratio) {
        return String.format(Locale.ROOT, "%,.0f vs %s %,.0f hand-offs/s: %.2f×", row.handOffsPerSecond(), other.library(),
                other.handOffsPerSecond(), ratio);
    }

    private static String shares(HotKeyPeers.Row row) {
        return Arrays.stream(row.jvmShares()).mapToObj(share -> String.format(Locale.ROOT, "%.0f %%", share * 100))
                .collect(Collectors.joining(" / "));
    }

    /**
     * One row per hot-key run: hand-offs, gaps, commands, fairness, overlaps; with {@code ratios} also
     * the hand-offs as a ratio to raw Jedis's and Redisson's rows among {@code rows}; JVM shares and the
     * longest same-JVM run when the rows ran in 2 JVMs.
     */
    private void hotKeyTable(String firstColumn, List<HotKeyPeers.Row> rows, boolean ratios) {
        boolean twoJvms = rows.stream().anyMatch(row -> row.jvms() > 1);
        double raw = ratios ? find(rows, HotKeyPeers.Row::library, "raw-jedis").handOffsPerSecond() : 0;
        double redisson = ratios ? find(rows, HotKeyPeers.Row::library, "redisson").handOffsPerSecond() : 0;
        report.add("| " + firstColumn + " | hand-offs/s" + (ratios ? " | × raw Jedis | × Redisson" : "")
                + " | gap p50 µs | gap p99 µs | Redis commands / hand-off | fewest / most per thread"
                + (twoJvms ? " | JVM shares | longest same-JVM run" : "") + " | overlaps |");
        report.add("|---|---|" + (ratios ? "---|---|" : "") + "---|---|---|---|" + (twoJvms ? "---|---|" : "") + "---|");
        for (HotKeyPeers.Row row : rows) {
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "| %s | %,.0f", row.library(), row.handOffsPerSecond()));
            if (ratios) {
                line.append(String.format(Locale.ROOT, " | %.2f | %.2f", row.handOffsPerSecond() / raw, row.handOffsPerSecond() / redisson));
            }
            line.append(String.format(Locale.ROOT, " | %.0f | %.0f | %.1f | %d / %d (%.2f)", row.gapP50Micros(), row.gapP99Micros(),
                    row.commandsPerHandOff(), row.minPerThread(), row.maxPerThread(), row.fairness()));
            if (twoJvms) {
                line.append(String.format(Locale.ROOT, " | %s | %,d", shares(row), row.longestJvmRun()));
            }
            line.append(String.format(Locale.ROOT, " | %d |", row.overlaps()));
            report.add(line.toString());
        }
    }

    // ---------------------------------------------------------------- scenario 6

    /** What FIFO order across JVMs costs per hand-off: the fair lock against the exclusive one on one hot key. */
    private void fairAgainstUnfair(RedisServerProcess redis) throws Exception {
        int threadsPerJvm = 8;
        List<HotKeyPeers.Row> rows = new ArrayList<>();
        for (String id : List.of("dlock", "dlock-fair")) {
            log.info("Fair against unfair: {}", id);
            rows.add(HotKeyPeers.run(redis, id, 2, threadsPerJvm, quick ? 3_000 : 15_000, workDir));
        }
        report.add("### 6. Fair against exclusive: one hot key, 2 JVMs × 8 threads");
        report.add("");
        hotKeyTable("lock", rows, false);
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
        report.add("| library | leases | Redis commands/s | script calls / 100 leases / 10 s | JVM CPU ms/s "
                + "| renewal threads CPU ms/s | lapses | acquiring took s | busiest commands |");
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
            String at = String.format(Locale.ROOT, "3, %,d leases: ", leases);
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
        verdictAtMost("4: dlock bytes per held lock ≤ 1 KiB", dlockHeap.heapBytesPerLock(), 1024);
        verdictAtMost("4: dlock heap per lock ≤ Redisson's (ratio)", dlockHeap.heapBytesPerLock() / redissonHeap.heapBytesPerLock(), 1);
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

    /** A row of the targets table: the target (led by its scenario), what was measured, met or missed. */
    private void verdict(String target, String measured, boolean met) {
        verdicts.add("| " + target + " | " + measured + " | **" + (met ? "met" : "missed") + "** |");
    }

    private void verdictAtMost(String target, double measured, double atMost) {
        verdict(target, String.format(Locale.ROOT, "%.2f", measured), measured <= atMost);
    }

    private static String memory() {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        return String.format(Locale.ROOT, "%.0f GiB RAM", os.getTotalMemorySize() / (1024.0 * 1024 * 1024));
    }
}
