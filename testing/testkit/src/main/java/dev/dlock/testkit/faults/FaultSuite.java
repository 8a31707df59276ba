package dev.dlock.testkit.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.ChildJvm;

/**
 * The fault-injection suite: N worker JVMs × M threads lock K keys and write to a fencing referee while
 * faults hit them on a seeded schedule — holders killed and paused past their lease, and the faults the
 * store's test adds (restarts, failovers, slow or cut connections). Every fault kind is injected once
 * first, in a seeded order, then at random. The run ends with a {@link FaultReport}.
 *
 * <p>The figures users rely on: {@code letThrough} (overlaps the fencing referee accepted) and
 * {@code silentLosses} must be 0 whatever the faults; wall-clock overlaps are expected only where the
 * docs say they can happen (a holder paused past its lease, a store that lost its data).
 */
public final class FaultSuite {

    /** How long the final check waits for a store that is still recovering from the run's last fault. */
    static final Duration STORE_RECOVERY = Duration.ofSeconds(120);

    private static final Logger log = LoggerFactory.getLogger(FaultSuite.class);
    /** How often a holder fault stops a worker and lets it go again before it finds it inside a section. */
    private static final int STOP_ATTEMPTS = 50;
    /** How long the test command's short mode runs. */
    private static final Duration SHORT_MODE_LENGTH = Duration.ofSeconds(40);
    /** The long mode's worker JVMs and threads in each (docs/reliability.md's runs). */
    private static final int LONG_MODE_JVMS = 4;
    private static final int LONG_MODE_THREADS = 8;

    /** How big and how long a run is; {@link #fromSystemProperties} reads overrides for the long mode. */
    public record Settings(Duration duration, int jvms, int threadsPerJvm, int hotKeys, int coldKeys, Duration leaseTime,
                           int maxHoldMillis, Duration faultInterval, long seed) {

        /** The short mode of the test command: 3 JVMs × 6 threads for 40 s, a fault every 5 s, seed 42. */
        public static Settings shortMode() {
            return new Settings(SHORT_MODE_LENGTH, 3, 6, 4, 24, Duration.ofMillis(1500), 30, Duration.ofSeconds(5), 42);
        }

        /**
         * Whether this is a long-mode run, longer than the short mode: 4 JVMs × 8 threads unless told otherwise, whose
         * workers run long enough for the optimizing compiler to pay for itself.
         */
        boolean longRun() {
            return isLong(duration);
        }

        private static boolean isLong(Duration length) {
            return length.compareTo(SHORT_MODE_LENGTH) > 0;
        }

        /**
         * These settings with overrides from system properties: {@code dlock.faults.minutes} or
         * {@code dlock.faults.seconds}, {@code dlock.faults.jvms}, {@code dlock.faults.threads},
         * {@code dlock.faults.seed}, {@code dlock.faults.interval-seconds}. A run longer than the short mode is
         * 4 JVMs × 8 threads unless those say otherwise: the test command's short mode is smaller to leave the CPU to
         * the builds beside it.
         */
        public Settings fromSystemProperties() {
            Duration length = System.getProperty("dlock.faults.minutes") != null ? Duration.ofMinutes(Long.getLong("dlock.faults.minutes"))
                    : System.getProperty("dlock.faults.seconds") != null ? Duration.ofSeconds(Long.getLong("dlock.faults.seconds"))
                    : duration;
            int defaultJvms = isLong(length) ? LONG_MODE_JVMS : jvms;
            int defaultThreads = isLong(length) ? LONG_MODE_THREADS : threadsPerJvm;
            return new Settings(length, Integer.getInteger("dlock.faults.jvms", defaultJvms),
                    Integer.getInteger("dlock.faults.threads", defaultThreads), hotKeys, coldKeys, leaseTime, maxHoldMillis,
                    Duration.ofSeconds(Long.getLong("dlock.faults.interval-seconds", faultInterval.toSeconds())),
                    Long.getLong("dlock.faults.seed", seed));
        }
    }

    private final String store;
    private final BackendFactory factory;
    private final String connection;
    private final IntFunction<String> workerConnection;
    private final Settings settings;
    private final List<Fault> faults;
    private final Path directory;

    private FaultSuite(Builder builder) {
        this.store = builder.store;
        this.factory = builder.factory;
        this.connection = builder.connection;
        this.workerConnection = builder.workerConnection != null ? builder.workerConnection : worker -> builder.connection;
        this.settings = builder.settings;
        this.faults = List.copyOf(builder.faults);
        this.directory = builder.directory;
    }

    /** Starts describing a run on {@code store} (a name for the report), whose backends {@code factory} makes from {@code connection}. */
    public static Builder builder(String store, BackendFactory factory, String connection) {
        return new Builder(store, factory, connection);
    }

    /** Runs the workload under the faults and returns what it showed; writes the report and worker logs into the directory. */
    public FaultReport run() throws Exception {
        Files.createDirectories(directory);
        String keyPrefix = "fault-suite:" + Long.toHexString(System.nanoTime()) + ":";
        Random schedule = new Random(settings.seed());
        List<FaultReport.InjectedFault> injected = new ArrayList<>();
        List<Set<String>> blockedKeys = new ArrayList<>();
        long startNanos;
        try (Referee referee = new Referee(); WorkerPool pool = new WorkerPool(referee, keyPrefix)) {
            for (int i = 0; i < settings.jvms(); i++) {
                pool.start(i);
            }
            awaitProgress(referee);
            startNanos = System.nanoTime();
            long endNanos = startNanos + settings.duration().toNanos();
            List<Fault> firstRound = new ArrayList<>(faults);
            Collections.shuffle(firstRound, schedule);
            while (true) {
                long nextAt = System.nanoTime() + settings.faultInterval().toNanos();
                // A fault's own length plus the time to recover must fit in before the end.
                if (nextAt + settings.leaseTime().toNanos() * 3 - endNanos > 0) {
                    break;
                }
                TimeUnit.NANOSECONDS.sleep(nextAt - System.nanoTime());
                Fault fault = firstRound.isEmpty() ? faults.get(schedule.nextInt(faults.size())) : firstRound.remove(0);
                injected.add(inject(fault, pool, startNanos));
                blockedKeys.add(pool.takeVictimKeys());
            }
            long remaining = endNanos - System.nanoTime();
            if (remaining > 0) {
                TimeUnit.NANOSECONDS.sleep(remaining);
            }
            pool.stopAll();
            fillRecoveries(injected, blockedKeys, referee, startNanos);
            FaultReport report = new FaultReport(store, settings.seed(), Duration.ofNanos(System.nanoTime() - startNanos),
                    settings.jvms(), settings.threadsPerJvm(), settings.hotKeys(), settings.coldKeys(), settings.leaseTime(),
                    referee.score(), injected, locksLeftHeld(keyPrefix));
            report.writeTo(directory, "report");
            log.info("fault suite on {}:\n{}", store, report.toMarkdown());
            return report;
        }
    }

    private void awaitProgress(Referee referee) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (referee.sectionsCompleted() == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("the workers completed no critical section within 120 s; see the logs in " + directory);
            }
            Thread.sleep(50);
        }
    }

    /**
     * Recovery is measured once the run is over, so that faults late in the run get their figure too: for
     * a fault on a holder, on the keys it held; for a store fault, on any key.
     */
    private static void fillRecoveries(List<FaultReport.InjectedFault> injected, List<Set<String>> blockedKeys,
                                       Referee referee, long startNanos) {
        for (int i = 0; i < injected.size(); i++) {
            FaultReport.InjectedFault fault = injected.get(i);
            long endedAt = startNanos + fault.at().plus(fault.lasted()).toNanos();
            long first = referee.firstCompletionAfter(endedAt, blockedKeys.get(i));
            injected.set(i, new FaultReport.InjectedFault(fault.name(), fault.at(), fault.lasted(),
                    first < 0 ? null : Duration.ofNanos(first - endedAt), fault.detail()));
        }
    }

    private FaultReport.InjectedFault inject(Fault fault, WorkerPool pool, long startNanos) {
        long at = System.nanoTime();
        String detail;
        try {
            detail = fault.inject(pool);
        } catch (Exception e) {
            log.error("fault {} failed to inject", fault.name(), e);
            detail = "failed to inject: " + e;
        }
        long lasted = System.nanoTime() - at;
        log.info("fault {} at {} ms, lasted {} ms: {}", fault.name(), TimeUnit.NANOSECONDS.toMillis(at - startNanos),
                TimeUnit.NANOSECONDS.toMillis(lasted), detail);
        return new FaultReport.InjectedFault(fault.name(), Duration.ofNanos(at - startNanos), Duration.ofNanos(lasted), null, detail);
    }

    /** Takes every key of the run, waiting out the leases of killed holders; the ones that stay taken were left held. */
    private int locksLeftHeld(String keyPrefix) throws InterruptedException {
        LockBackend backend = factory.create(connection);
        try (LockManager locks = LockManager.builder(backend).build()) {
            List<String> keys = new ArrayList<>();
            for (int i = 0; i < settings.hotKeys() + settings.coldKeys(); i++) {
                keys.add(keyPrefix + i);
            }
            return keysLeftHeld(locks, keys, settings.leaseTime().multipliedBy(2).plusSeconds(3), STORE_RECOVERY);
        } finally {
            factory.dispose(backend);
        }
    }

    /**
     * How many of {@code keys} stay taken for {@code wait} each. The run may end in the middle of a store fault (a
     * failover under way, a restart): a key the store cannot answer for is asked again until it answers, for up to
     * {@code storeRecovery} in all, and only then does the failure count against the run.
     */
    static int keysLeftHeld(LockManager locks, List<String> keys, Duration wait, Duration storeRecovery) throws InterruptedException {
        long recoveryDeadline = System.nanoTime() + storeRecovery.toNanos();
        int left = 0;
        for (String key : keys) {
            while (true) {
                try {
                    var handle = locks.tryAcquire(dev.dlock.core.LockRequest.builder(key).waitTime(wait).build());
                    if (handle.isPresent()) {
                        handle.get().close();
                    } else {
                        log.error("key {} is still held after the run", key);
                        left++;
                    }
                    break;
                } catch (dev.dlock.core.LockBackendException e) {
                    if (System.nanoTime() - recoveryDeadline > 0) {
                        throw e;
                    }
                    log.info("the store does not answer for key {} yet (the last fault may still be recovering): {}", key, e.toString());
                    Thread.sleep(250);
                }
            }
        }
        return left;
    }

    /** The worker JVMs of one run. */
    private final class WorkerPool implements Fault.Workers, AutoCloseable {
        private final Referee referee;
        private final String keyPrefix;
        private final Process[] processes = new Process[settings.jvms()];
        private final int[] generations = new int[settings.jvms()];
        private final Random picks = new Random(settings.seed() ^ 0x5DEECE66DL);
        private final Set<Long> paused = Collections.synchronizedSet(new HashSet<>());
        /** The keys the last picked holder was inside when picked. */
        private Set<String> victimKeys = Set.of();

        WorkerPool(Referee referee, String keyPrefix) {
            this.referee = referee;
            this.keyPrefix = keyPrefix;
        }

        void start(int worker) throws IOException {
            int generation = generations[worker]++;
            String java = ChildJvm.javaBinary();
            // A short run's worker lives seconds (and restarts after a kill): the client compiler alone costs it less CPU.
            List<String> command = List.of(java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=" + (settings.longRun() ? 4 : 1),
                    "-cp", System.getProperty("java.class.path"), FaultWorker.class.getName(), factory.getClass().getName(), workerConnection.apply(worker),
                    Integer.toString(referee.port()), Integer.toString(worker), Integer.toString(settings.threadsPerJvm()),
                    keyPrefix, Integer.toString(settings.hotKeys()), Integer.toString(settings.coldKeys()),
                    Long.toString(settings.seed() + 7919L * generation), Long.toString(settings.leaseTime().toMillis()),
                    Integer.toString(settings.maxHoldMillis()));
            processes[worker] = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("worker-" + worker + ".log").toFile()))
                    .start();
        }

        @Override
        public synchronized int pickHolder() {
            List<Integer> holders = new ArrayList<>(referee.workersInside());
            Collections.sort(holders);
            int worker = holders.isEmpty() ? picks.nextInt(processes.length) : holders.get(picks.nextInt(holders.size()));
            victimKeys = referee.keysInsideOf(worker);
            return worker;
        }

        @Override
        public List<String> hotKeys() {
            List<String> hot = new ArrayList<>();
            for (int i = 0; i < settings.hotKeys(); i++) {
                hot.add(keyPrefix + i);
            }
            return hot;
        }

        synchronized Set<String> takeVictimKeys() {
            Set<String> keys = victimKeys;
            victimKeys = Set.of();
            return keys;
        }

        @Override
        public void killAndReplace(int worker) throws Exception {
            Process process = processes[worker];
            stopHolding(worker);
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
            paused.remove(process.pid());
            start(worker);
        }

        @Override
        public void pause(int worker, Duration duration) throws Exception {
            long pid = processes[worker].pid();
            stopHolding(worker);
            try {
                Thread.sleep(duration.toMillis());
            } finally {
                signal("CONT", pid);
                paused.remove(pid);
            }
        }

        /**
         * Stops the worker (SIGSTOP) at a moment the referee sees it inside a section, so the fault hits a
         * holder: a section lasts milliseconds, and a worker picked while inside may have left by the time the
         * signal lands. Gives up after a few tries and keeps the worker stopped anyway.
         */
        private void stopHolding(int worker) throws IOException, InterruptedException {
            long pid = processes[worker].pid();
            for (int attempt = 1; ; attempt++) {
                signal("STOP", pid);
                paused.add(pid);
                Set<String> keys = referee.keysInsideOf(worker);
                if (!keys.isEmpty() || attempt == STOP_ATTEMPTS) {
                    synchronized (this) {
                        victimKeys = keys;
                    }
                    return;
                }
                signal("CONT", pid);
                paused.remove(pid);
                Thread.sleep(5);
            }
        }

        /** Closes every worker's standard input, so each finishes its sections and exits; kills those that do not. */
        void stopAll() throws InterruptedException {
            for (Process process : processes) {
                try {
                    process.getOutputStream().close();
                } catch (IOException e) {
                    log.warn("could not close a worker's input: {}", e.toString());
                }
            }
            for (int i = 0; i < processes.length; i++) {
                if (!processes[i].waitFor(60, TimeUnit.SECONDS)) {
                    log.error("worker {} did not stop within 60 s; killing it", i);
                    processes[i].destroyForcibly();
                } else if (processes[i].exitValue() != 0) {
                    log.error("worker {} exited with {}; see {}", i, processes[i].exitValue(), directory.resolve("worker-" + i + ".log"));
                }
            }
        }

        @Override
        public void close() {
            for (Long pid : List.copyOf(paused)) {
                try {
                    signal("CONT", pid);
                } catch (Exception e) {
                    log.warn("could not resume process {}: {}", pid, e.toString());
                }
            }
            for (Process process : processes) {
                if (process != null && process.isAlive()) {
                    process.destroyForcibly();
                }
            }
        }
    }

    private static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true).start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -" + signal + " " + pid + " failed: " + new String(kill.getInputStream().readAllBytes()));
        }
    }

    /** Describes one run of the suite. */
    public static final class Builder {
        private final String store;
        private final BackendFactory factory;
        private final String connection;
        private IntFunction<String> workerConnection;
        private Settings settings = Settings.shortMode().fromSystemProperties();
        private final List<Fault> faults = new ArrayList<>();
        private Path directory = Path.of("target", "fault-suite");

        private Builder(String store, BackendFactory factory, String connection) {
            this.store = Objects.requireNonNull(store, "store");
            this.factory = Objects.requireNonNull(factory, "factory");
            this.connection = Objects.requireNonNull(connection, "connection");
        }

        /** The connection each worker uses (say, worker 0 through a fault proxy); default: the suite's connection. */
        public Builder workerConnection(IntFunction<String> workerConnection) {
            this.workerConnection = workerConnection;
            return this;
        }

        /** Size and length of the run (default: the short mode, with system-property overrides). */
        public Builder settings(Settings settings) {
            this.settings = Objects.requireNonNull(settings, "settings");
            return this;
        }

        /** Adds a fault to the schedule; add the built-in {@link Fault#killHolder()} and {@link Fault#pauseHolder} too. */
        public Builder fault(Fault fault) {
            faults.add(Objects.requireNonNull(fault, "fault"));
            return this;
        }

        /** Where the report and the worker logs go (default {@code target/fault-suite}). */
        public Builder directory(Path directory) {
            this.directory = Objects.requireNonNull(directory, "directory");
            return this;
        }

        /** The suite, ready to run. */
        public FaultSuite build() {
            if (faults.isEmpty()) {
                throw new IllegalStateException("a fault suite needs at least one fault");
            }
            return new FaultSuite(this);
        }
    }
}
