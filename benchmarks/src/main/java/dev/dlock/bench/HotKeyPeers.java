package dev.dlock.bench;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.HdrHistogram.Histogram;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Scenario 2: one hot key, contended by {@code threadsPerJvm} threads in this JVM and, in the
 * two-JVM shape, as many in a child JVM. Every critical section's acquire and release time is
 * recorded with {@link System#nanoTime()}, which on Linux reads the system-wide monotonic clock, so
 * the two JVMs' sections can be merged on one time line: hand-offs per second, the gap from one
 * release to the next acquire, overlaps (two holders at once; must be 0), each JVM's share of the
 * acquisitions and the longest run of consecutive acquisitions by one JVM. Redis commands per
 * hand-off come from {@code INFO commandstats}.
 */
final class HotKeyPeers {

    private static final Logger log = LoggerFactory.getLogger(HotKeyPeers.class);

    private static final String READY = "READY";
    private static final String GO = "GO";
    private static final String DONE = "DONE";
    private static final long WARM_UP_MILLIS = 1_000;

    /**
     * One library's result. {@code jvmShares} is each JVM's fraction of the acquisitions and
     * {@code longestJvmRun} the most consecutive acquisitions by one JVM, both counted while all
     * JVMs were acquiring (the edges, where one JVM has started or stopped alone, are left out).
     */
    record Row(String library, int jvms, int threadsPerJvm, double handOffsPerSecond, double gapP50Micros, double gapP99Micros,
               double commandsPerHandOff, long handOffs, long minPerThread, long maxPerThread, long overlaps,
               double[] jvmShares, long longestJvmRun) {

        /** Fewest over most acquisitions of any thread: 1 is perfectly even, 0 means a thread starved. */
        double fairness() {
            return maxPerThread == 0 ? 0 : (double) minPerThread / maxPerThread;
        }

        /** The shape, for example {@code 2 JVMs × 8 threads}. */
        String shape() {
            return HotKeyPeers.shape(jvms, threadsPerJvm);
        }
    }

    /** How a shape is named in tables and charts. */
    static String shape(int jvms, int threadsPerJvm) {
        return jvms == 1 ? "1 JVM × " + threadsPerJvm + " threads" : jvms + " JVMs × " + threadsPerJvm + " threads";
    }

    /** The critical sections of one thread: acquire and release times, alternating. */
    private static final class Sections {
        private long[] times = new long[1024];
        private int size;

        void add(long acquiredAt, long releasedAt) {
            if (size + 2 > times.length) {
                times = Arrays.copyOf(times, times.length * 2);
            }
            times[size++] = acquiredAt;
            times[size++] = releasedAt;
        }

        int count() {
            return size / 2;
        }
    }

    private HotKeyPeers() {
    }

    /**
     * Runs {@code library} on one key with {@code threadsPerJvm} threads here and, when {@code jvms}
     * is 2, as many in a child JVM.
     */
    static Row run(RedisServerProcess redis, String library, int jvms, int threadsPerJvm, long millis, Path workDir) throws Exception {
        if (jvms != 1 && jvms != 2) {
            throw new IllegalArgumentException("1 or 2 JVMs, not " + jvms);
        }
        String key = "hot:" + library + ":" + jvms + "x" + threadsPerJvm;
        if (jvms == 1) {
            try (LockUnderTest locks = PeerLocks.open(library)) {
                contend(locks, threadsPerJvm, key, WARM_UP_MILLIS);
                long commandsBefore = redis.totalCommandCalls();
                long start = System.nanoTime();
                List<Sections> sections = contend(locks, threadsPerJvm, key, millis);
                long commands = redis.totalCommandCalls() - commandsBefore;
                return summarize(library, threadsPerJvm, List.of(sections), start, millis, commands);
            }
        }
        String files = "hot-key-" + library + "-" + jvms + "x" + threadsPerJvm;
        Path childSamples = workDir.resolve(files + ".bin");
        try (ChildJvm child = ChildJvm.start(HotKeyPeers.class, List.of("-Xmx512m"),
                List.of(library, Integer.toString(threadsPerJvm), Long.toString(millis), key, childSamples.toString()),
                workDir.resolve(files + ".log"));
             LockUnderTest locks = PeerLocks.open(library)) {
            contend(locks, threadsPerJvm, key, WARM_UP_MILLIS);
            child.awaitLine(READY);
            long commandsBefore = redis.totalCommandCalls();
            child.send(GO);
            long start = System.nanoTime();
            List<Sections> here = contend(locks, threadsPerJvm, key, millis);
            child.awaitLine(DONE);
            child.awaitSuccess(120);
            long commands = redis.totalCommandCalls() - commandsBefore;
            return summarize(library, threadsPerJvm, List.of(here, read(childSamples)), start, millis, commands);
        }
    }

    /** The child JVM: {@code library threads millis key samplesFile}. */
    public static void main(String[] args) throws Exception {
        String library = args[0];
        int threads = Integer.parseInt(args[1]);
        long millis = Long.parseLong(args[2]);
        String key = args[3];
        Path samples = Path.of(args[4]);
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (LockUnderTest locks = PeerLocks.open(library)) {
            contend(locks, threads, key, WARM_UP_MILLIS);
            ChildJvm.tellParent(READY);
            ChildJvm.awaitParent(stdin, GO);
            write(contend(locks, threads, key, millis), samples);
        }
        ChildJvm.tellParent(DONE);
        System.exit(0);
    }

    private static List<Sections> contend(LockUnderTest locks, int threads, String key, long millis) throws InterruptedException {
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch done = new CountDownLatch(threads);
        List<Sections> all = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Sections mine = new Sections();
            all.add(mine);
            Thread thread = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        AutoCloseable held = locks.lock(key);
                        long acquiredAt = System.nanoTime();
                        long releasedAt = System.nanoTime();
                        held.close();
                        mine.add(acquiredAt, releasedAt);
                    }
                } catch (Exception e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                } finally {
                    done.countDown();
                }
            }, "hot-key-" + t);
            thread.start();
        }
        Thread.sleep(millis);
        stop.set(true);
        done.await();
        if (!failures.isEmpty()) {
            throw new IllegalStateException(locks.name() + ": " + failures.size() + " threads failed", failures.get(0));
        }
        return all;
    }

    private static Row summarize(String library, int threadsPerJvm, List<List<Sections>> byJvm, long start, long millis,
                                 long commands) {
        int jvms = byJvm.size();
        int total = byJvm.stream().flatMap(List::stream).mapToInt(Sections::count).sum();
        // acquire, release, JVM index
        long[][] sections = new long[total][];
        int n = 0;
        long min = Long.MAX_VALUE;
        long max = 0;
        // Runs and shares count only while every JVM acquires: from the latest first acquire to the earliest last one.
        long bothFrom = Long.MIN_VALUE;
        long bothUntil = Long.MAX_VALUE;
        for (int jvm = 0; jvm < jvms; jvm++) {
            long first = Long.MAX_VALUE;
            long last = Long.MIN_VALUE;
            for (Sections thread : byJvm.get(jvm)) {
                min = Math.min(min, thread.count());
                max = Math.max(max, thread.count());
                for (int i = 0; i < thread.size; i += 2) {
                    sections[n++] = new long[] {thread.times[i], thread.times[i + 1], jvm};
                    first = Math.min(first, thread.times[i]);
                    last = Math.max(last, thread.times[i]);
                }
            }
            bothFrom = Math.max(bothFrom, first);
            bothUntil = Math.min(bothUntil, last);
        }
        Arrays.sort(sections, Comparator.comparingLong(section -> section[0]));
        Histogram gaps = new Histogram(3);
        Histogram switchGaps = new Histogram(3);
        long overlaps = 0;
        long inWindow = 0;
        long end = start + millis * 1_000_000;
        long[] perJvm = new long[jvms];
        long longestRun = 0;
        long run = 0;
        long runJvm = -1;
        for (int i = 0; i < sections.length; i++) {
            if (sections[i][0] >= start && sections[i][0] <= end) {
                inWindow++;
            }
            if (i > 0) {
                long gap = sections[i][0] - sections[i - 1][1];
                if (gap < 0) {
                    overlaps++;
                } else {
                    gaps.recordValue(gap);
                    if (sections[i][2] != sections[i - 1][2]) {
                        switchGaps.recordValue(gap);
                    }
                }
            }
            if (sections[i][0] >= bothFrom && sections[i][0] <= bothUntil) {
                int jvm = (int) sections[i][2];
                perJvm[jvm]++;
                run = jvm == runJvm ? run + 1 : 1;
                runJvm = jvm;
                longestRun = Math.max(longestRun, run);
            }
        }
        if (jvms > 1) {
            log.info("{}, {}: gap when the key changes JVM p50 {} µs, p90 {} µs, {} changes; every gap p50 {} µs, mean {} µs",
                    library, shape(jvms, threadsPerJvm), switchGaps.getValueAtPercentile(50) / 1_000,
                    switchGaps.getValueAtPercentile(90) / 1_000, switchGaps.getTotalCount(), gaps.getValueAtPercentile(50) / 1_000,
                    (long) gaps.getMean() / 1_000);
        }
        long counted = Arrays.stream(perJvm).sum();
        double[] shares = Arrays.stream(perJvm).mapToDouble(count -> counted == 0 ? 0 : (double) count / counted).toArray();
        return new Row(library, jvms, threadsPerJvm, inWindow / (millis / 1e3), gaps.getValueAtPercentile(50) / 1e3,
                gaps.getValueAtPercentile(99) / 1e3, total == 0 ? 0 : (double) commands / total, total, min, max, overlaps,
                shares, longestRun);
    }

    private static void write(List<Sections> threads, Path file) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file)))) {
            out.writeInt(threads.size());
            for (Sections thread : threads) {
                out.writeInt(thread.size);
                for (int i = 0; i < thread.size; i++) {
                    out.writeLong(thread.times[i]);
                }
            }
        }
    }

    private static List<Sections> read(Path file) throws IOException {
        List<Sections> threads = new ArrayList<>();
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
            int count = in.readInt();
            for (int t = 0; t < count; t++) {
                Sections thread = new Sections();
                int size = in.readInt();
                for (int i = 0; i < size; i += 2) {
                    thread.add(in.readLong(), in.readLong());
                }
                threads.add(thread);
            }
        }
        return threads;
    }
}
