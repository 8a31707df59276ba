package dev.dlock.bench;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * Two builds of dlock in one JVM, each in a class loader of its own, timed in alternating rounds on one thread by
 * {@link AspectInMemoryBenchmark#operation}: the cost of a change to the engine, measured so that neither drift nor
 * other processes on a shared machine bias it. Time is the thread's CPU time per call (preemption does not count).
 *
 * <p>{@code java -cp benchmarks/target/dlock-benchmarks.jar dev.dlock.bench.SideBySideBuilds BEFORE.jar AFTER.jar
 * [rounds] [roundMillis]}, each jar a {@code dlock-benchmarks.jar} built from the commit to compare. The first jar
 * runs with its defaults; the second with lock-order warnings on, then off.
 */
public final class SideBySideBuilds {

    private static final Logger log = LoggerFactory.getLogger(SideBySideBuilds.class);

    private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

    private SideBySideBuilds() {
    }

    /** One timed variant: a name and one call. */
    private record Variant(String name, Function<String, Object> call) {
    }

    /** Runs the comparison and prints the median CPU ns per call of each variant and the median per-round ratios. */
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            throw new IllegalArgumentException("usage: SideBySideBuilds BEFORE.jar AFTER.jar [rounds] [roundMillis]");
        }
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 15;
        long roundMillis = args.length > 3 ? Long.parseLong(args[3]) : 1_000;
        List<Variant> variants = new ArrayList<>();
        for (boolean nested : new boolean[] {false, true}) {
            String call = nested ? "two nested locks" : "one lock";
            variants.add(new Variant(call + ", before", operation(args[0], true, nested)));
            variants.add(new Variant(call + ", after, warnings on", operation(args[1], true, nested)));
            variants.add(new Variant(call + ", after, warnings off", operation(args[1], false, nested)));
        }
        double[][] nanos = new double[variants.size()][rounds];
        for (int warmUp = 0; warmUp < 2; warmUp++) {
            for (Variant variant : variants) {
                cpuNanosPerCall(variant.call(), roundMillis);
            }
        }
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < variants.size(); i++) {
                int v = round % 2 == 0 ? i : variants.size() - 1 - i;
                nanos[v][round] = cpuNanosPerCall(variants.get(v).call(), roundMillis);
            }
        }
        for (int v = 0; v < variants.size(); v++) {
            log.info(String.format("%-40s %,8.0f CPU ns per call (median of %d rounds)", variants.get(v).name(),
                    median(nanos[v]), rounds));
        }
        for (int first = 0; first < variants.size(); first += 3) {
            log.info(String.format("%s: after-on / before %.3f, after-off / before %.3f, on / off %.3f (medians of per-round ratios)",
                    variants.get(first).name().replace(", before", ""),
                    InterleavedThroughput.Result.medianRatio(nanos[first + 1], nanos[first]),
                    InterleavedThroughput.Result.medianRatio(nanos[first + 2], nanos[first]),
                    InterleavedThroughput.Result.medianRatio(nanos[first + 1], nanos[first + 2])));
        }
    }

    /** The annotated call of the build in {@code jar}, loaded apart from every other build. */
    @SuppressWarnings("unchecked")
    private static Function<String, Object> operation(String jar, boolean lockOrderWarnings, boolean nested) throws Exception {
        URL[] urls = {Path.of(jar).toUri().toURL()};
        URLClassLoader loader = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
        Thread current = Thread.currentThread();
        ClassLoader previous = current.getContextClassLoader();
        // Spring finds the aspect through the context class loader: without this the calls would run unlocked.
        current.setContextClassLoader(loader);
        try {
            Method operation = loader.loadClass(AspectInMemoryBenchmark.class.getName())
                    .getMethod("operation", boolean.class, boolean.class);
            return (Function<String, Object>) operation.invoke(null, lockOrderWarnings, nested);
        } finally {
            current.setContextClassLoader(previous);
        }
    }

    private static double cpuNanosPerCall(Function<String, Object> call, long millis) {
        long end = System.nanoTime() + millis * 1_000_000;
        long calls = 0;
        long start = CPU.getCurrentThreadCpuTime();
        do {
            for (int i = 0; i < 100; i++) {
                call.apply("42");
            }
            calls += 100;
        } while (System.nanoTime() - end < 0);
        return (double) (CPU.getCurrentThreadCpuTime() - start) / calls;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
