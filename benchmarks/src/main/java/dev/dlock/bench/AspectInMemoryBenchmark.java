package dev.dlock.bench;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.aspect.EnableDistributedLocks;
import dev.dlock.core.LockManager;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.util.List;
import java.util.function.Function;
import java.util.concurrent.TimeUnit;

/**
 * The cost of one {@code @DistributedLock} call on the in-memory store, uncontended, in nanoseconds: the aspect and
 * the engine without any network, so that what the engine adds per call (lock-order warnings among it) shows.
 * {@code java -cp benchmarks/target/dlock-benchmarks.jar org.openjdk.jmh.Main AspectInMemoryBenchmark}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class AspectInMemoryBenchmark {

    private static final Logger log = LoggerFactory.getLogger(AspectInMemoryBenchmark.class);

    /** Whether the lock manager learns lock orders ({@code LockManager.Builder.lockOrderWarnings}). */
    @Param({"true", "false"})
    public boolean lockOrderWarnings;

    private AnnotationConfigApplicationContext context;
    private Accounts accounts;

    /** Locked methods: one lock, and one lock nested in another. */
    public static class Accounts {
        private Ledger ledger;

        /** Locks {@code account:<id>}. */
        @DistributedLock(name = "account", key = "#id", waitTime = "0")
        public long debit(String id) {
            return id.length();
        }

        /** Locks {@code account:<id>}, then {@code ledger:<id>} inside. */
        @DistributedLock(name = "account", key = "#id", waitTime = "0")
        public long transfer(String id) {
            return ledger.post(id);
        }
    }

    /** The inner lock of {@link Accounts#transfer}. */
    public static class Ledger {
        /** Locks {@code ledger:<id>}. */
        @DistributedLock(name = "ledger", key = "#id", waitTime = "0")
        public long post(String id) {
            return id.length();
        }
    }

    /** Starts the Spring context over an in-memory lock manager. */
    @Setup(Level.Trial)
    public void start() {
        context = context(lockOrderWarnings);
        accounts = context.getBean(Accounts.class);
    }

    private static AnnotationConfigApplicationContext context(boolean lockOrderWarnings) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.registerBean("lockOrderWarnings", Boolean.class, () -> lockOrderWarnings);
        context.register(Context.class);
        context.refresh();
        return context;
    }

    /**
     * One annotated call (one lock, or two nested) on a context of its own, left open for the JVM's life: for a
     * harness that loads two builds of dlock side by side, each in a class loader of its own, and alternates them.
     */
    public static Function<String, Object> operation(boolean lockOrderWarnings, boolean nested) {
        Accounts accounts = context(lockOrderWarnings).getBean(Accounts.class);
        return nested ? accounts::transfer : accounts::debit;
    }

    /**
     * Lock-order warnings on against off in one JVM, in alternating rounds (one thread), which drift on a shared
     * machine cannot bias: {@code java -cp benchmarks/target/dlock-benchmarks.jar dev.dlock.bench.AspectInMemoryBenchmark
     * [rounds] [roundMillis]}. Prints the median ns per call of each variant and the median per-round cost ratio.
     */
    public static void main(String[] args) throws InterruptedException {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 15;
        long roundMillis = args.length > 1 ? Long.parseLong(args[1]) : 1_000;
        try (AnnotationConfigApplicationContext off = context(false); AnnotationConfigApplicationContext on = context(true)) {
            Accounts without = off.getBean(Accounts.class);
            Accounts with = on.getBean(Accounts.class);
            List<InterleavedThroughput.Variant> variants = List.of(
                    new InterleavedThroughput.Variant("one lock, warnings off", without::debit),
                    new InterleavedThroughput.Variant("one lock, warnings on", with::debit),
                    new InterleavedThroughput.Variant("nested locks, warnings off", without::transfer),
                    new InterleavedThroughput.Variant("nested locks, warnings on", with::transfer));
            InterleavedThroughput.Result result = InterleavedThroughput.measure(variants, 1, rounds, roundMillis);
            for (int v = 0; v < variants.size(); v++) {
                log.info(String.format("%-28s %,10.0f ns per call (median of %d rounds)", variants.get(v).name(),
                        1e9 / result.medianOpsPerSecond()[v], rounds));
            }
            // Cost ratio on / off: the inverse of the throughput ratio, per round.
            log.info(String.format("one lock: on / off = %.3f; nested locks: on / off = %.3f (median of per-round ratios)",
                    result.medianRatio(0, 1), result.medianRatio(2, 3)));
        }
    }

    /** Closes the context. */
    @TearDown(Level.Trial)
    public void stop() {
        context.close();
    }

    /** One annotated call taking one lock. */
    @Benchmark
    public long oneLock() {
        return accounts.debit("42");
    }

    /** One annotated call taking a lock, calling another that takes a second lock inside it. */
    @Benchmark
    public long nestedLocks() {
        return accounts.transfer("42");
    }

    /** The aspect over an in-memory lock manager. */
    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks
    static class Context {
        @Bean(destroyMethod = "close")
        InMemoryLockBackend backend() {
            return new InMemoryLockBackend();
        }

        @Bean(destroyMethod = "close")
        LockManager lockManager(InMemoryLockBackend backend, Boolean lockOrderWarnings) {
            return LockManager.builder(backend).lockOrderWarnings(lockOrderWarnings).build();
        }

        @Bean
        Ledger ledger() {
            return new Ledger();
        }

        @Bean
        Accounts accounts(Ledger ledger) {
            Accounts accounts = new Accounts();
            accounts.ledger = ledger;
            return accounts;
        }
    }
}
