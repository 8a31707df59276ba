package dev.dlock.bench;

import dev.dlock.testkit.redis.RedisServerProcess;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Scenarios 3 and 4: in a fresh child JVM per library, take {@code leases} locks, measure the heap
 * they occupy, then keep them held for a while and measure what keeping them alive costs: Redis
 * commands per second (from {@code INFO commandstats}, read by the parent around the hold), CPU of
 * the whole JVM and of the library's renewal threads, and lapses (held keys gone from Redis at the end).
 */
final class HeldLeasesPeers {

    private static final String ACQUIRED = "ACQUIRED";
    private static final String GO = "GO";
    private static final String HELD = "HELD";
    private static final String CHECK = "CHECK";
    private static final int ACQUIRING_THREADS = 16;

    /** One library holding {@code leases} locks for {@code holdSeconds}. */
    record Row(String library, int leases, double holdSeconds, double acquireSeconds, double heapBytesPerLock,
               double commandsPerSecond, double scriptCallsPerSecond, double processCpuMillisPerSecond,
               double renewalThreadCpuMillisPerSecond, long lapses, String busiestCommands, long liveThreads,
               double residentMiB) {

        /** Script calls per 100 held leases per 10 s (one renewal round of a 30 s lease). */
        double callsPer100LeasesPerRound() {
            return scriptCallsPerSecond * 10 / (leases / 100.0);
        }
    }

    private HeldLeasesPeers() {
    }

    /** Runs one library in a child JVM and returns what it measured, with the Redis side read here. */
    static Row run(RedisServerProcess redis, String library, int leases, int holdSeconds, Path workDir) throws Exception {
        Path resultFile = workDir.resolve("held-" + library + "-" + leases + ".properties");
        String heap = leases >= 50_000 ? "-Xmx3g" : "-Xmx1g";
        try (ChildJvm child = ChildJvm.start(HeldLeasesPeers.class, List.of(heap, "-Xms256m"),
                List.of(library, Integer.toString(leases), Integer.toString(holdSeconds), resultFile.toString()),
                workDir.resolve("held-" + library + "-" + leases + ".log"))) {
            child.awaitLine(ACQUIRED);
            Map<String, Long> before = redis.commandCalls();
            long start = System.nanoTime();
            child.send(GO);
            child.awaitLine(HELD);
            double seconds = (System.nanoTime() - start) / 1e9;
            Map<String, Long> after = redis.commandCalls();
            child.send(CHECK);
            child.awaitSuccess(300);
            Properties measured = new Properties();
            try (var in = Files.newBufferedReader(resultFile)) {
                measured.load(in);
            }
            try (var admin = redis.admin()) {
                admin.flushAll();
            }
            return new Row(library, leases, seconds, number(measured, "acquireSeconds"), number(measured, "heapBytesPerLock"),
                    (sumExceptInfo(after) - sumExceptInfo(before)) / seconds,
                    (scriptCalls(after) - scriptCalls(before)) / seconds,
                    number(measured, "processCpuMillis") / seconds, number(measured, "renewalThreadCpuMillis") / seconds,
                    (long) number(measured, "lapses"), busiest(before, after, seconds), (long) number(measured, "liveThreads"),
                    number(measured, "residentMiB"));
        }
    }

    /** The child JVM: {@code library leases holdSeconds resultFile}. */
    public static void main(String[] args) throws Exception {
        String library = args[0];
        int leases = Integer.parseInt(args[1]);
        int holdSeconds = Integer.parseInt(args[2]);
        Path resultFile = Path.of(args[3]);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
        try (LockUnderTest locks = PeerLocks.open(library)) {
            // Warm up with one lock that stays held: no lock/unlock churn before the hold. (Redisson 4.7.0
            // starts one more renewal loop each time its set of held locks goes from empty to non-empty,
            // so 100 lock/unlock cycles here made it renew every lease 100 times per round.)
            locks.lock("warm-up");
            long heapBefore = WatchdogHarness.settledHeap(memory);
            long acquireStart = System.nanoTime();
            AutoCloseable[] held = acquireAll(locks, leases);
            double acquireSeconds = (System.nanoTime() - acquireStart) / 1e9;
            long heapAfter = WatchdogHarness.settledHeap(memory);
            int liveThreads = ManagementFactory.getThreadMXBean().getThreadCount();
            double residentMiB = residentMiB();

            ChildJvm.tellParent(ACQUIRED);
            ChildJvm.awaitParent(stdin, GO);
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            long processCpuBefore = os.getProcessCpuTime();
            Map<Long, Long> renewalCpuBefore = renewalThreadCpu(locks);
            Thread.sleep(holdSeconds * 1_000L);
            long processCpu = os.getProcessCpuTime() - processCpuBefore;
            long renewalCpu = 0;
            for (Map.Entry<Long, Long> thread : renewalThreadCpu(locks).entrySet()) {
                renewalCpu += thread.getValue() - renewalCpuBefore.getOrDefault(thread.getKey(), 0L);
            }
            ChildJvm.tellParent(HELD);
            ChildJvm.awaitParent(stdin, CHECK);

            Properties result = new Properties();
            result.setProperty("acquireSeconds", Double.toString(acquireSeconds));
            result.setProperty("heapBytesPerLock", Double.toString((double) (heapAfter - heapBefore) / leases));
            result.setProperty("processCpuMillis", Double.toString(processCpu / 1e6));
            result.setProperty("renewalThreadCpuMillis", Double.toString(renewalCpu / 1e6));
            result.setProperty("lapses", Long.toString(lapses(locks, leases)));
            result.setProperty("liveThreads", Integer.toString(liveThreads));
            result.setProperty("residentMiB", Double.toString(residentMiB));
            try (var out = Files.newBufferedWriter(resultFile)) {
                result.store(out, library + " holding " + leases + " leases");
            }
            if (held.length != leases) {
                throw new IllegalStateException("held " + held.length + " of " + leases);
            }
        }
        System.exit(0);
    }

    /** The process's resident memory (heap, thread stacks, everything) from /proc; -1 where there is no /proc. */
    private static double residentMiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
                }
            }
        } catch (java.io.IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    private static AutoCloseable[] acquireAll(LockUnderTest locks, int leases) throws Exception {
        AutoCloseable[] held = new AutoCloseable[leases];
        ExecutorService pool = Executors.newFixedThreadPool(ACQUIRING_THREADS);
        try {
            List<Future<?>> parts = new ArrayList<>();
            for (int part = 0; part < ACQUIRING_THREADS; part++) {
                int first = part;
                parts.add(pool.submit(() -> {
                    for (int i = first; i < leases; i += ACQUIRING_THREADS) {
                        held[i] = locks.lock(heldKey(i));
                    }
                    return null;
                }));
            }
            for (Future<?> part : parts) {
                part.get();
            }
        } finally {
            pool.shutdown();
        }
        return held;
    }

    private static String heldKey(int i) {
        return "held:" + i;
    }

    /** Held keys missing from Redis, checked in pipelined EXISTS batches. */
    private static long lapses(LockUnderTest locks, int leases) {
        long missing = 0;
        try (UnifiedJedis redis = BenchRedis.client()) {
            for (int from = 0; from < leases; from += 1_000) {
                List<Response<Boolean>> exists = new ArrayList<>();
                try (AbstractPipeline pipeline = redis.pipelined()) {
                    for (int i = from; i < Math.min(leases, from + 1_000); i++) {
                        exists.add(pipeline.exists(locks.storeKey(heldKey(i))));
                    }
                    pipeline.sync();
                }
                missing += exists.stream().filter(response -> !response.get()).count();
            }
        }
        return missing;
    }

    private static Map<Long, Long> renewalThreadCpu(LockUnderTest locks) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Map<Long, Long> cpu = new HashMap<>();
        for (ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (info != null && locks.isRenewalThread(info.getThreadName())) {
                cpu.put(info.getThreadId(), threads.getThreadCpuTime(info.getThreadId()));
            }
        }
        return cpu;
    }

    /** The three commands Redis executed most between the two snapshots, per second. */
    private static String busiest(Map<String, Long> before, Map<String, Long> after, double seconds) {
        return after.entrySet().stream()
                .filter(entry -> !entry.getKey().equals("info"))
                .map(entry -> Map.entry(entry.getKey(), entry.getValue() - before.getOrDefault(entry.getKey(), 0L)))
                .filter(entry -> entry.getValue() > 0)
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .limit(3)
                .map(entry -> String.format(java.util.Locale.ROOT, "%s %,.0f/s", entry.getKey(), entry.getValue() / seconds))
                .collect(java.util.stream.Collectors.joining(", "));
    }

    private static double number(Properties properties, String name) {
        return Double.parseDouble(properties.getProperty(name));
    }

    private static long sumExceptInfo(Map<String, Long> calls) {
        return calls.entrySet().stream().filter(entry -> !entry.getKey().equals("info")).mapToLong(Map.Entry::getValue).sum();
    }

    private static long scriptCalls(Map<String, Long> calls) {
        return calls.getOrDefault("evalsha", 0L) + calls.getOrDefault("eval", 0L)
                + calls.getOrDefault("evalsha_ro", 0L) + calls.getOrDefault("eval_ro", 0L) + calls.getOrDefault("fcall", 0L);
    }
}
