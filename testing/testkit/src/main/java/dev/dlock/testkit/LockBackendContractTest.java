package dev.dlock.testkit;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.LeaseLostPolicy;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKeyException;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The behaviour every lock backend must show through {@link LockManager}, run against a real store.
 * A backend module extends this class once per connection mode and provides the store hooks; a new
 * backend is done when this suite passes against its real server. A store that runs as a process of
 * its own extends {@link StoreFailureContractTest} instead, which adds the tests that crash it. The
 * store-level tier, {@link LockBackendSpiContractTest}, runs on the same store as the nested class {@code Spi}, and the
 * extension of fixed leases, {@link LeaseExtensionContractTest}, as the nested class {@code Extension}.
 */
public abstract class LockBackendContractTest {

    /** Creates backends (each with its own client) connected to the store under test. */
    protected abstract BackendFactory factory();

    /** The connection string {@link #factory()} understands; also handed to the child JVM. */
    protected abstract String connection();

    /** Deletes the logical {@code key}'s lock entry behind its holder's back. */
    protected abstract void deleteKey(String key);

    /** Deletes everything in the store (FLUSHALL). */
    protected abstract void wipeStore();

    /** How many commands the store has executed so far (its own statistics, not the client's). */
    protected abstract long storeCommandCount();

    /**
     * Whether a second JVM can lock in the same store through {@link #factory()} and {@link #connection()};
     * false (a store inside this JVM) skips the test that contends from a child JVM.
     */
    protected boolean sharedAcrossJvms() {
        return true;
    }

    /**
     * How long the contention tests take turns before a task may stop short of its turns: a store slower than its
     * turns allow (a polling JDBC store, a loaded machine) then stops at {@link #MIN_CONTENDED_TURNS} per task.
     */
    static final Duration CONTENTION_BUDGET = Duration.ofSeconds(4);
    /** The turns each contending task takes however long they take. */
    static final int MIN_CONTENDED_TURNS = 50;

    /**
     * How many times each of the sixteen contending threads takes the key in
     * {@code sixteenThreadsOnTwoManagersNeverOverlap}. A store whose every acquisition is several round trips (a quorum of
     * nodes, a queue of znodes) takes fewer, so that its run costs about what a one-round-trip store's does.
     */
    protected int contendedTurnsPerThread() {
        return 500;
    }

    private final List<LockManager> managers = new ArrayList<>();
    private Boolean fences;
    private Boolean sessionKept;
    private final List<LockBackend> backends = new ArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private String key;

    /** The key the current test locks: unique per test method and run. */
    protected String key() {
        return key;
    }

    @BeforeEach
    void uniqueKey(TestInfo test) {
        key = "contract:" + test.getTestMethod().map(m -> m.getName()).orElse("test") + ":" + UUID.randomUUID();
    }

    @BeforeEach
    void engineTierWhereRun(TestInfo test) {
        boolean engineTier = test.getTestMethod().map(m -> m.getDeclaringClass() == LockBackendContractTest.class).orElse(false);
        String runBy = engineTierRunBy();
        assumeTrue(!engineTier || runBy == null, () -> "the engine tier runs on " + runBy + ", with the same statements");
    }

    /**
     * Null where this class runs the engine tier (the tests declared in this class) besides the store tier, the
     * extension tier and its own tests; else the class that runs it on the same statements or scripts. A variant
     * through another driver names its sibling, whose engine-tier run would only repeat it.
     */
    protected String engineTierRunBy() {
        return null;
    }

    @AfterEach
    void closeManagers() {
        threads.forEach(Thread::interrupt);
        managers.forEach(LockManager::close);
        backends.forEach(b -> factory().dispose(b));
        managers.clear();
        backends.clear();
    }

    /**
     * Whether the store issues fencing tokens ({@link BackendCapabilities#fencing()}). Where it does not,
     * the tests that check tokens check instead that every handle refuses to hand one out.
     */
    protected final boolean storeFences() {
        if (fences == null) {
            fences = newBackend().capabilities().fencing();
        }
        return fences;
    }

    /**
     * Whether the store keeps leases alive by its session ({@link BackendCapabilities#sessionLeases()}). Where it
     * does, the watchdog tests check instead that no renewal is ever sent and the key stays held.
     */
    protected final boolean storeKeepsLeasesBySession() {
        if (sessionKept == null) {
            sessionKept = newBackend().capabilities().sessionLeases().isPresent();
        }
        return sessionKept;
    }

    /** The store-level tier ({@link LockBackendSpiContractTest}) on the same store: the SPI's promises, asked of a backend directly. */
    @Nested
    class Spi extends LockBackendSpiContractTest {

        @Override
        protected BackendFactory factory() {
            return LockBackendContractTest.this.factory();
        }

        @Override
        protected String connection() {
            return LockBackendContractTest.this.connection();
        }

        @Override
        protected long renewedLeaseRemainingMillis(String key, AcquireResult.Held refusal) {
            return LockBackendContractTest.this.renewedLeaseRemainingMillis(key, refusal);
        }
    }

    /** The extension tier ({@link LeaseExtensionContractTest}) on the same store: a fixed lease's new terms. */
    @Nested
    class Extension extends LeaseExtensionContractTest {

        @Override
        protected BackendFactory factory() {
            return LockBackendContractTest.this.factory();
        }

        @Override
        protected String connection() {
            return LockBackendContractTest.this.connection();
        }
    }

    /**
     * What the store-level tier reads as the remaining lease of a key just renewed
     * ({@link LockBackendSpiContractTest#renewedLeaseRemainingMillis}): the refusal's TTL unless a quorum store overrides it.
     */
    protected long renewedLeaseRemainingMillis(String key, AcquireResult.Held refusal) {
        return refusal.remainingTtlMillis();
    }

    /** A recording wrapper over a fresh backend; each acts like a separate process. */
    protected RecordingBackend newBackend() {
        LockBackend backend = factory().create(connection());
        backends.add(backend);
        return new RecordingBackend(backend);
    }

    /** A manager over {@code backend}, closed after the test. */
    protected LockManager manager(LockBackend backend, Consumer<LockManager.Builder> config) {
        LockManager.Builder builder = LockManager.builder(backend);
        config.accept(builder);
        LockManager manager = builder.build();
        managers.add(manager);
        return manager;
    }

    /** A manager over a fresh backend with default settings. */
    protected LockManager manager() {
        return manager(newBackend(), b -> { });
    }

    // ------------------------------------------------------------------ exclusion

    @Test
    void sixteenThreadsOnTwoManagersNeverOverlap() throws Exception {
        sixteenCallersOnTwoManagersNeverOverlap(contendedTurnsPerThread(), task -> this::acquireBlocking);
    }

    @Test
    void virtualThreadsNeverOverlap() throws Exception {
        ExecutorService pool;
        try {
            pool = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor").invoke(null);
        } catch (NoSuchMethodException e) {
            assumeTrue(false, "virtual threads need Java 21+");
            return;
        }
        LockManager locks = manager();
        OverlapDetector detector = new OverlapDetector();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        int turns = contend(pool, 64, 20, task -> locks, task -> this::acquireBlocking, detector, tokens);
        assertThat(detector.overlaps()).isZero();
        assertThat(detector.counter()).isEqualTo(turns);
        assertTokens(tokens, turns);
    }

    @Test
    void asyncCallersOnTwoManagersNeverOverlapWithBlockingOnes() throws Exception {
        // Three in four callers go through acquireAsync, on both managers; the rest block in acquire beside them.
        sixteenCallersOnTwoManagersNeverOverlap(60, task -> task % 4 == 3 ? this::acquireBlocking : this::acquireThroughFuture);
    }

    /** Sixteen threads on two managers take the key {@code iterations} times each, as {@code acquireOfTask} says. */
    private void sixteenCallersOnTwoManagersNeverOverlap(int iterations, IntFunction<Function<LockManager, LockHandle>> acquireOfTask)
            throws Exception {
        LockManager first = manager();
        LockManager second = manager();
        OverlapDetector detector = new OverlapDetector();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = Executors.newFixedThreadPool(16);
        int turns = contend(pool, 16, iterations, task -> task % 2 == 0 ? first : second, acquireOfTask, detector, tokens);
        assertThat(detector.overlaps()).isZero();
        assertThat(detector.counter()).isEqualTo(turns);
        assertTokens(tokens, turns);
    }

    private LockHandle acquireBlocking(LockManager locks) {
        return locks.acquire(key, Duration.ofSeconds(60));
    }

    /** Acquires through {@link LockManager#acquireAsync}; the calling thread only waits for the future's answer. */
    private LockHandle acquireThroughFuture(LockManager locks) {
        try {
            return locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build()).get(90, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("acquireAsync of key '" + key + "' failed", e);
        }
    }

    /**
     * Runs {@code tasks} tasks on {@code pool}, each taking the test's key up to {@code iterations} times the way
     * {@code acquireOfTask} says, and returns how many turns they took in all; shuts the pool down. A task stops early
     * once {@link #CONTENTION_BUDGET} has passed and it has taken {@link #MIN_CONTENDED_TURNS} turns: a store slowed by a
     * loaded machine (a polling JDBC store behind another build) then runs seconds, not minutes, of the same contention.
     */
    private int contend(ExecutorService pool, int tasks, int iterations, IntFunction<LockManager> managerOfTask,
                        IntFunction<Function<LockManager, LockHandle>> acquireOfTask, OverlapDetector detector,
                        List<Long> tokens) throws Exception {
        boolean fencing = storeFences();
        int leastTurns = Math.min(iterations, MIN_CONTENDED_TURNS);
        long budgetEnd = System.nanoTime() + CONTENTION_BUDGET.toNanos();
        try {
            List<Future<Integer>> done = new ArrayList<>();
            for (int t = 0; t < tasks; t++) {
                LockManager locks = managerOfTask.apply(t);
                Function<LockManager, LockHandle> acquire = acquireOfTask.apply(t);
                done.add(pool.submit(() -> {
                    int turn = 0;
                    for (; turn < iterations && (turn < leastTurns || System.nanoTime() - budgetEnd < 0); turn++) {
                        try (LockHandle lock = acquire.apply(locks)) {
                            detector.enter();
                            if (fencing) {
                                tokens.add(lock.fencingToken());
                            } else {
                                assertThatThrownBy(lock::fencingToken).isInstanceOf(UnsupportedOperationException.class);
                            }
                            detector.incrementUnsafely();
                            detector.exit();
                        }
                    }
                    return turn;
                }));
            }
            int turns = 0;
            for (Future<Integer> f : done) {
                turns += f.get(5, TimeUnit.MINUTES);
            }
            return turns;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void twoJvmsNeverOverlapAndFencingTokensKeepIncreasing(@TempDir Path dir) throws Exception {
        assumeTrue(sharedAcrossJvms(), "the store cannot be shared with another JVM");
        // As many turns as a contending thread takes, at most 400, in the child and in the parent's two threads together.
        int parentIterationsPerThread = Math.min(200, contendedTurnsPerThread() / 2);
        int childIterations = 2 * parentIterationsPerThread;
        Path childLog = dir.resolve("child.log");
        Process child = new ProcessBuilder(ChildJvm.command(Contender.class,
                factory().getClass().getName(), connection(), key, Integer.toString(childIterations), dir.toString()))
                .redirectErrorStream(true).redirectOutput(childLog.toFile()).start();
        try {
            Contender contender = new Contender(dir);
            // Start contending once the child is in its loop, so that the two really compete.
            awaitTrue(Duration.ofSeconds(60), () -> {
                try {
                    return contender.counter() > 0 || !child.isAlive();
                } catch (IOException | NumberFormatException e) {
                    return false;
                }
            });
            LockManager locks = manager();
            ExecutorService pool = Executors.newFixedThreadPool(2);
            List<Future<Integer>> overlaps = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                overlaps.add(pool.submit(() -> contender.run(locks, key, parentIterationsPerThread)));
            }
            int parentOverlaps = 0;
            for (Future<Integer> f : overlaps) {
                parentOverlaps += f.get(3, TimeUnit.MINUTES);
            }
            pool.shutdown();
            assertThat(child.waitFor(3, TimeUnit.MINUTES)).as("child finished").isTrue();
            assertThat(child.exitValue()).as("child exit (3 = overlaps seen); log:%n%s", Files.readString(childLog)).isZero();
            assertThat(parentOverlaps).isZero();
            assertThat(contender.counter()).isEqualTo(2 * childIterations);
            Path tokenLog = dir.resolve("tokens");
            List<Long> tokens = Files.exists(tokenLog) ? Files.readAllLines(tokenLog).stream().map(Long::parseLong).toList() : List.of();
            assertTokens(tokens, 2 * childIterations);
        } finally {
            child.destroyForcibly();
        }
    }

    // ------------------------------------------------------------------ ownership

    @Test
    void onlyTheOwnerReleases() {
        LockManager holder = manager();
        LockManager other = manager();
        RecordingBackend stranger = newBackend();
        try (LockHandle lock = holder.acquire(key, Duration.ZERO)) {
            assertThat(stranger.release(LockKind.EXCLUSIVE, key, "not-the-owner", 0)).isEqualTo(ReleaseResult.NOT_OWNER);
            assertThat(other.tryAcquire(key)).as("still held after a stranger's release").isEmpty();
            assertThat(lock.isHeld()).isTrue();
        }
        assertFree(other, key, "the key is free");
    }

    @Test
    void aHandleCanBeReleasedByAnotherThread() throws Exception {
        LockManager holder = manager();
        LockManager other = manager();
        LockHandle lock = holder.acquire(key, Duration.ZERO);
        Thread closer = new Thread(lock::close);
        closer.start();
        closer.join(10_000);
        assertThat(lock.state()).isEqualTo(LockState.RELEASED);
        assertFree(other, key, "the key is free");
    }

    /**
     * A release before {@code lockAtLeastFor} ends keeps the key from everyone, the releasing JVM included, until it
     * ends, and no longer: for a watchdog lease and for a fixed one (side by side). On ZooKeeper the backend times the
     * kept term.
     */
    @Test
    void aReleaseBeforeLockAtLeastForKeepsTheKeyUntilItEndsAndNoLonger() throws Exception {
        assumeTrue(newBackend().capabilities().sessionLeases().map(SessionLeases::endsShortenedLeases).orElse(true),
                "the store keeps leases by its session and cannot time a shortened one: no lockAtLeastFor");
        Duration atLeast = Duration.ofMillis(1_500);
        LockManager jvm = manager();
        LockManager otherJvm = manager();
        List<String> keys = List.of(key + ":watched", key + ":fixed");
        long acquiredAt = System.nanoTime();
        for (String k : keys) {
            LockRequest.Builder request = LockRequest.builder(k).waitTime(Duration.ZERO).lockAtLeastFor(atLeast);
            if (k.endsWith(":fixed")) {
                request.leaseTime(Duration.ofSeconds(20));
            }
            jvm.acquire(request.build()).close();
        }
        if (System.nanoTime() - acquiredAt < atLeast.toNanos() / 2) {
            for (String k : keys) {
                assertThat(otherJvm.tryAcquire(k)).as("%s: another JVM right after the early release", k).isEmpty();
                assertThat(jvm.tryAcquire(k)).as("%s: the releasing JVM right after its early release", k).isEmpty();
            }
        }
        List<Future<Long>> freedAfterMillis = new ArrayList<>();
        for (String k : keys) {
            CompletableFuture<Long> freed = new CompletableFuture<>();
            start(() -> {
                try {
                    otherJvm.acquire(k, Duration.ofSeconds(30)).close();
                    freed.complete(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - acquiredAt));
                } catch (Throwable e) {
                    freed.completeExceptionally(e);
                }
            });
            freedAfterMillis.add(freed);
        }
        for (int i = 0; i < keys.size(); i++) {
            assertThat(freedAfterMillis.get(i).get(40, TimeUnit.SECONDS)).as("%s: ms until another JVM took the key", keys.get(i))
                    .isGreaterThanOrEqualTo(atLeast.toMillis() - 5).isLessThan(atLeast.toMillis() + 15_000);
        }
    }

    /**
     * A task cancelled in its critical section ({@code Future.cancel(true)}, {@code shutdownNow()}) unlocks in its
     * finally block with its interrupt status set: the release still frees the key in the store (some clients, as
     * ZooKeeper's, refuse any call from an interrupted thread), and the status is kept for the caller.
     */
    @Test
    void aHolderWhoseThreadIsInterruptedStillReleasesTheKeyAndKeepsItsStatus() throws Exception {
        LockManager holder = manager();
        LockManager other = manager();
        AtomicReference<LockHandle> lock = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean statusKept = new AtomicBoolean();
        Thread cancelled = new Thread(() -> releaseInterrupted(holder, lock, failure, statusKept), "cancelled-holder");
        cancelled.start();
        cancelled.join(30_000);
        assertThat(failure.get()).as("what the interrupted holder's release threw").isNull();
        assertThat(lock.get().state()).isEqualTo(LockState.RELEASED);
        assertThat(statusKept).as("interrupt status kept").isTrue();
        assertFree(other, key, "the key is free after the interrupted holder's release");
    }

    /** As above while a thread of the same JVM waits: the key is passed to it (a hand-off, when the store has one). */
    @Test
    void anInterruptedHoldersReleaseStillPassesTheKeyToTheWaiterOfItsJvm() throws Exception {
        LockManager holder = manager();
        AtomicReference<LockHandle> lock = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean statusKept = new AtomicBoolean();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch mayRelease = new CountDownLatch(1);
        Thread cancelled = start(() -> {
            lock.set(holder.acquire(key, Duration.ZERO));
            held.countDown();
            try {
                mayRelease.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                failure.set(e);
            }
            Thread.currentThread().interrupt();
            try {
                lock.get().close();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
            statusKept.set(Thread.currentThread().isInterrupted());
        });
        assertThat(held.await(30, TimeUnit.SECONDS)).as("the holder took the key").isTrue();
        CompletableFuture<LockHandle> next = new CompletableFuture<>();
        Thread waiter = start(() -> {
            try {
                next.complete(holder.acquire(key, Duration.ofSeconds(60)));
            } catch (Throwable e) {
                next.completeExceptionally(e);
            }
        });
        awaitTrue(Duration.ofSeconds(10), () -> waiter.getState() == Thread.State.WAITING
                || waiter.getState() == Thread.State.TIMED_WAITING);
        mayRelease.countDown();
        cancelled.join(30_000);
        assertThat(failure.get()).as("what the interrupted holder's release threw").isNull();
        assertThat(statusKept).as("interrupt status kept").isTrue();
        LockHandle taken = next.get(30, TimeUnit.SECONDS);
        assertThat(taken.isHeld()).as("the waiter of the same JVM got the key").isTrue();
        taken.close();
    }

    /**
     * The shutdown half of the above: a manager closed from a thread whose interrupt status is set (a cancelled task, an
     * executor's {@code shutdownNow}) still frees the key another of its threads holds, and keeps the closing thread's status.
     */
    @Test
    void aManagerClosedFromAnInterruptedThreadStillFreesTheKeyAnotherThreadHolds() throws Exception {
        LockManager holder = manager();
        LockManager other = manager();
        AtomicReference<LockHandle> lock = new AtomicReference<>();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch testOver = new CountDownLatch(1);
        start(() -> {
            lock.set(holder.acquire(key, Duration.ZERO));
            held.countDown();
            try {
                testOver.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            assertThat(held.await(30, TimeUnit.SECONDS)).as("the holder took the key").isTrue();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicBoolean statusKept = new AtomicBoolean();
            Thread closing = start(() -> {
                Thread.currentThread().interrupt();
                try {
                    holder.close(Duration.ZERO);
                } catch (Throwable e) {
                    failure.set(e);
                }
                statusKept.set(Thread.currentThread().isInterrupted());
            });
            closing.join(30_000);
            assertThat(closing.isAlive()).as("close() returned").isFalse();
            assertThat(failure.get()).as("what close() threw").isNull();
            assertThat(statusKept).as("interrupt status kept").isTrue();
            assertThat(lock.get().state()).as("the holder's lease, reported lost").isEqualTo(LockState.LOST);
            assertFree(other, key, "the key is free after the manager closed from an interrupted thread");
        } finally {
            testOver.countDown();
        }
    }

    private void releaseInterrupted(LockManager holder, AtomicReference<LockHandle> lock, AtomicReference<Throwable> failure,
                                    AtomicBoolean statusKept) {
        lock.set(holder.acquire(key, Duration.ZERO));
        Thread.currentThread().interrupt();
        try {
            lock.get().close();
        } catch (Throwable e) {
            failure.set(e);
        }
        statusKept.set(Thread.currentThread().isInterrupted());
    }

    @Test
    void closingTwiceReleasesOnceAndFailsLoudly() {
        RecordingBackend backend = newBackend();
        LockManager holder = manager(backend, b -> { });
        LockManager other = manager();
        LockHandle lock = holder.acquire(key, Duration.ZERO);
        lock.close();
        try (LockHandle next = other.acquire(key, Duration.ZERO)) {
            assertThatThrownBy(lock::close).isInstanceOf(IllegalStateException.class).hasMessageContaining(key);
            assertThat(backend.releases).hasValue(1);
            assertThat(manager().tryAcquire(key)).as("the second close deleted nothing").isEmpty();
            assertThat(next.isHeld()).isTrue();
        }
    }

    @Test
    void reentryCostsNoStoreCommands() {
        boolean fencing = storeFences();
        RecordingBackend backend = newBackend();
        LockManager locks = manager(backend, b -> { });
        try (LockHandle outer = locks.acquire(key, Duration.ZERO)) {
            // Read first: a store that issues the token on request issues it here, once per hold, not per re-entry.
            long outerToken = fencing ? outer.fencingToken() : 0;
            // The count is the server's, of every client: a statement another test left behind (a late release of an
            // attempt whose outcome was unknown) can land in one window, never in each of three.
            List<Long> commandsPerWindow = new ArrayList<>();
            for (int window = 0; window < 3 && !commandsPerWindow.contains(0L); window++) {
                long before = storeCommandCount();
                try (LockHandle middle = locks.acquire(key, Duration.ZERO);
                     LockHandle inner = locks.acquire(key, Duration.ZERO)) {
                    if (fencing) {
                        assertThat(inner.fencingToken()).isEqualTo(outerToken);
                    }
                    assertThat(middle.isHeld()).isTrue();
                }
                commandsPerWindow.add(storeCommandCount() - before);
            }
            assertThat(commandsPerWindow).as("store commands for re-entry depth 3, per try").contains(0L);
            assertThat(outer.isHeld()).isTrue();
            assertThat(manager().tryAcquire(key)).as("inner releases keep the key").isEmpty();
        }
        assertThat(backend.acquires).hasValue(1);
        assertThat(backend.releases).hasValue(1);
        assertFree(manager(), key, "the outermost release frees the key");
    }

    @Test
    void otherThreadsOfTheSameJvmDoNotReenter() throws Exception {
        LockManager locks = manager();
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            AtomicReference<Optional<LockHandle>> fromOtherThread = new AtomicReference<>();
            Thread other = new Thread(() -> fromOtherThread.set(locks.tryAcquire(key)));
            other.start();
            other.join(10_000);
            assertThat(fromOtherThread.get()).isEmpty();
            assertThat(lock.isHeld()).isTrue();
        }
    }

    @Test
    void aDetachedLockIsNotReenteredByItsThread() {
        LockManager locks = manager();
        LockHandle detached = locks.acquire(key, Duration.ZERO).detachFromThread();
        try {
            assertThat(locks.tryAcquire(key)).isEmpty();
        } finally {
            detached.close();
        }
    }

    @Test
    void aClosedManagerRefusesNewLocks() {
        RecordingBackend backend = newBackend();
        LockManager locks = manager(backend, b -> { });
        locks.close();
        assertThatThrownBy(() -> locks.acquire(key, Duration.ZERO)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThat(backend.acquires).hasValue(0);
    }

    @Test
    void badKeysAreRejectedBeforeTouchingTheStore() {
        RecordingBackend backend = newBackend();
        LockManager locks = manager(backend, b -> { });
        assertThatThrownBy(() -> locks.acquire(null, Duration.ZERO)).isInstanceOf(LockKeyException.class).hasMessageContaining("null");
        assertThatThrownBy(() -> locks.acquire("  ", Duration.ZERO)).isInstanceOf(LockKeyException.class).hasMessageContaining("blank");
        assertThatThrownBy(() -> locks.acquire("k".repeat(1025), Duration.ZERO)).isInstanceOf(LockKeyException.class).hasMessageContaining("1024");
        assertThat(backend.acquires).hasValue(0);
        String unusual = "order {42} with spaces, ünïcødé and }braces{" + "x".repeat(900);
        try (LockHandle lock = locks.acquire(unusual, Duration.ZERO)) {
            assertThat(manager().tryAcquire(unusual)).isEmpty();
            assertThat(lock.isHeld()).isTrue();
        }
    }

    // ------------------------------------------------------------------ leases and the watchdog

    @Test
    void aFixedLeaseExpiresAndItsLateReleaseReportsTheLoss() {
        LockManager first = manager();
        LockManager second = manager();
        LockHandle lock = first.acquire(LockRequest.builder(key).leaseTime(Duration.ofMillis(300)).waitTime(Duration.ZERO).build());
        try (LockHandle next = second.acquire(key, Duration.ofSeconds(10))) {
            assertThat(lock.isHeld()).isFalse();
            assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class).hasMessageContaining(key);
            assertThat(next.isHeld()).isTrue();
            assertThat(manager().tryAcquire(key)).as("the late release deleted nothing").isEmpty();
        }
    }

    @Test
    void theWatchdogKeepsALeaseAliveForFourTimesItsLength() {
        // 1.5 s: renewed every 500 ms, so only a stall of a second would lose it (a 750 ms lease lost a PostgreSQL
        // renewal beside other builds); four lease lengths show that it is renewed, not merely not run out yet.
        Duration lease = Duration.ofMillis(1_500);
        AtomicInteger renewed = new AtomicInteger();
        RecordingBackend backend = newBackend();
        LockManager locks = manager(backend, b -> b.leaseTime(lease).listener(renewals(renewed)));
        LockManager other = manager();
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            long end = System.nanoTime() + lease.multipliedBy(4).toNanos();
            while (System.nanoTime() < end) {
                assertThat(other.tryAcquire(key)).as("held while renewed").isEmpty();
                sleep(150);
            }
            assertThat(lock.isHeld()).isTrue();
        }
        if (storeKeepsLeasesBySession()) {
            assertThat(backend.renewals).as("renewals sent to a store that keeps leases by its session").isEmpty();
        } else {
            assertThat(renewed.get()).isGreaterThanOrEqualTo(8);
        }
        assertFree(other, key, "the key is free");
    }

    @Test
    void aReleasedLeaseIsNeverRenewedAgain() {
        if (storeKeepsLeasesBySession()) {
            assertHeldBySessionWithoutRenewals();
            return;
        }
        RecordingBackend backend = newBackend();
        // Short, so that the watchdog goes round often (1.5 s: a 600 ms Redlock lease ran out before its first renewal
        // at a load of 8, and a lost lease is never renewed).
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(1_500)));
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            awaitTrue(Duration.ofSeconds(5), () -> backend.renewalsOf(key) >= 1);
        }
        long renewalsAtRelease = backend.renewalsOf(key);
        String witness = key + ":witness";
        try (LockHandle other = locks.acquire(witness, Duration.ZERO)) {
            // Three renewals of another lease prove the watchdog went round several times since.
            awaitTrue(Duration.ofSeconds(10), () -> backend.renewalsOf(witness) >= 3);
        }
        assertThat(backend.renewalsOf(key)).isEqualTo(renewalsAtRelease);
    }

    @Test
    void aReleaseThatLandsWhileTheWatchdogHoldsTheLeaseWins() throws Exception {
        if (storeKeepsLeasesBySession()) {
            // No renewal is ever in hand to race the release.
            assertHeldBySessionWithoutRenewals();
            return;
        }
        RecordingBackend backend = newBackend();
        AtomicInteger lost = new AtomicInteger();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(1500)).listener(losses(lost)));
        CountDownLatch renewalInHand = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        backend.beforeRenew(batch -> {
            if (batch.stream().anyMatch(r -> r.key().equals(key)) && first.compareAndSet(true, false)) {
                renewalInHand.countDown();
                try {
                    released.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        assertThat(renewalInHand.await(10, TimeUnit.SECONDS)).isTrue();
        lock.close();
        released.countDown();
        String witness = key + ":witness";
        try (LockHandle other = locks.acquire(witness, Duration.ZERO)) {
            awaitTrue(Duration.ofSeconds(10), () -> backend.renewalsOf(witness) >= 3);
        }
        assertThat(backend.renewalsOf(key)).as("only the renewal that was in hand").isEqualTo(1);
        assertThat(lost).as("a released lease is not reported lost").hasValue(0);
        assertFree(manager(), key, "the key is free");
    }

    // ------------------------------------------------------------------ a hold owns its store value

    /**
     * A watched holder's renewal is on its way (a slow network) when the holder releases and the key goes to a local
     * waiter that asked for a fixed 10 s lease. The old renewal then lands: it must not set the successor's lease
     * back to the watchdog's (or the key expires under the successor, another JVM takes it, and both hold it).
     */
    @Test
    void aLateRenewalOfTheReleasingHolderCannotChangeTheLeaseOfTheNextLocalHolder() throws Exception {
        assumeTrue(!storeKeepsLeasesBySession(), "the store keeps leases by its session: no renewals");
        RecordingBackend backend = newBackend();
        CountDownLatch renewalOnItsWay = new CountDownLatch(1);
        CountDownLatch renewalMayLand = new CountDownLatch(1);
        AtomicInteger landed = new AtomicInteger();
        AtomicBoolean first = new AtomicBoolean(true);
        backend.beforeRenew(batch -> {
            if (batch.stream().anyMatch(r -> r.key().equals(key)) && first.compareAndSet(true, false)) {
                renewalOnItsWay.countDown();
                try {
                    renewalMayLand.await(20, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        backend.aroundRenew(call -> {
            try {
                return call.get();
            } finally {
                landed.incrementAndGet();
            }
        });
        LockManager jvm = manager(backend, b -> b.leaseTime(Duration.ofMillis(900)));
        LockManager otherJvm = manager();
        LockHandle holder = jvm.acquire(key, Duration.ZERO);
        assertThat(renewalOnItsWay.await(10, TimeUnit.SECONDS)).as("the watchdog sent a renewal").isTrue();
        // Queued in this JVM before the release: the release passes the key straight to it where the store can.
        CompletableFuture<LockHandle> successor = acquireAsyncElsewhere(jvm, LockRequest.builder(key)
                .leaseTime(Duration.ofSeconds(10)).waitTime(Duration.ofSeconds(10)).build());
        holder.close();
        try (LockHandle next = successor.get(10, TimeUnit.SECONDS)) {
            renewalMayLand.countDown();
            awaitTrue(Duration.ofSeconds(10), () -> landed.get() > 0);
            // The old renewal set a 900 ms lease: without the fix the key is free well within this wait.
            Optional<LockHandle> overlapping = otherJvm.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofMillis(1_800)).build());
            overlapping.ifPresent(LockHandle::close);
            assertThat(overlapping).as("another JVM within 1.8 s of the old renewal landing, while the next holder's 10 s "
                    + "lease runs (held: %s)", next.isHeld()).isEmpty();
            assertThat(next.isHeld()).isTrue();
        }
    }

    /**
     * A thread waiting in the JVM gets the key by a hand-off, after an earlier hand-off on the manager measured the
     * store's call: on a fast store it is woken as the call goes out and spins for the answer. A release and a
     * renewal sent for the holder before it, landing only now, must miss the next holder's lease.
     */
    @Test
    void lateCommandsOfTheHolderBeforeAHandOffToAWaitingThreadMissTheNextHolder() throws Exception {
        RecordingBackend backend = newBackend();
        assumeTrue(backend.capabilities().localHandOff().isPresent(), "the store passes no key straight to a local waiter");
        LockManager jvm = manager(backend, b -> b.leaseTime(Duration.ofSeconds(30)));
        LockManager otherJvm = manager();
        // A first hand-off, on a key of its own: it times the store's hand-off call for the one below.
        handOffToAWaitingThread(jvm, key + ":first").close();
        LockHandle next = handOffToAWaitingThread(jvm, key);
        try {
            String earlierOwner = backend.acquiringOwners.get(backend.acquiringOwners.size() - 1);
            assertThat(backend.handOffs.get()).as("hand-offs sent").isEqualTo(2);
            assertThat(backend.release(LockKind.EXCLUSIVE, key, earlierOwner, AcquireResult.Acquired.TOKEN_ON_REQUEST)).as("the earlier holder's late release")
                    .isNotEqualTo(ReleaseResult.RELEASED);
            if (!storeKeepsLeasesBySession()) {
                assertThat(backend.renew(List.of(new LeaseRenewal(key, earlierOwner, 60_000, LockKind.EXCLUSIVE))))
                        .as("the earlier holder's late renewal").doesNotContain(RenewalResult.RENEWED);
            }
            assertThat(otherJvm.tryAcquire(key)).as("another JVM, while the next holder holds the key").isEmpty();
            assertThat(next.isHeld()).as("the next holder").isTrue();
        } finally {
            next.close();
        }
        assertThat(otherJvm.tryAcquire(key)).as("another JVM, once the next holder released").isPresent().get()
                .satisfies(LockHandle::close);
    }

    /** Takes {@code lockKey} on this thread, queues a thread of {@code jvm} for it, releases: the handle it got. */
    private LockHandle handOffToAWaitingThread(LockManager jvm, String lockKey) throws Exception {
        LockHandle holder = jvm.acquire(lockKey, Duration.ZERO);
        CompletableFuture<LockHandle> next = new CompletableFuture<>();
        Thread waiter = start(() -> {
            try {
                next.complete(jvm.acquire(lockKey, Duration.ofSeconds(30)));
            } catch (Throwable e) {
                next.completeExceptionally(e);
            }
        });
        awaitTrue(Duration.ofSeconds(10), () -> waiter.getState() == Thread.State.WAITING
                || waiter.getState() == Thread.State.TIMED_WAITING);
        holder.close();
        return next.get(30, TimeUnit.SECONDS);
    }

    /**
     * A renewal that timed out at the client is still on its way when the holder releases before
     * {@code lockAtLeastFor} ends; it lands after the release shortened the lease. It must not keep the key a whole
     * watchdog lease: the key frees itself when {@code lockAtLeastFor} ends.
     */
    @Test
    void aRenewalThatTimedOutAndLandsAfterTheShorteningCannotKeepTheKeyPastLockAtLeastFor() throws Exception {
        assumeTrue(!storeKeepsLeasesBySession(), "the store keeps leases by its session: no lockAtLeastFor");
        RecordingBackend backend = newBackend();
        CountDownLatch renewalGaveUp = new CountDownLatch(1);
        CountDownLatch renewalMayLand = new CountDownLatch(1);
        CountDownLatch landed = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        backend.aroundRenew(call -> {
            if (!first.compareAndSet(true, false)) {
                return call.get();
            }
            // The client gives up at once; the command reaches the store later.
            start(() -> {
                try {
                    renewalMayLand.await(20, TimeUnit.SECONDS);
                    call.get();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    landed.countDown();
                }
            });
            renewalGaveUp.countDown();
            throw new LockBackendException("read timed out (the command is still on its way)", null);
        });
        Duration lockAtLeastFor = Duration.ofSeconds(3);
        LockManager jvm = manager(backend, b -> b.leaseTime(Duration.ofSeconds(6)));
        LockManager otherJvm = manager();
        long acquiredAt = System.nanoTime();
        LockHandle job = jvm.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).lockAtLeastFor(lockAtLeastFor).build());
        assertThat(renewalGaveUp.await(10, TimeUnit.SECONDS)).as("the watchdog's renewal timed out").isTrue();
        job.close();
        renewalMayLand.countDown();
        assertThat(landed.await(10, TimeUnit.SECONDS)).as("the late renewal landed").isTrue();
        // Fixed: free at lockAtLeastFor (3 s after acquiring); the bug kept it a whole 6 s lease from the late renewal.
        Duration waitFor = lockAtLeastFor.plusMillis(3_500).minus(Duration.ofNanos(System.nanoTime() - acquiredAt));
        Optional<LockHandle> next = otherJvm.tryAcquire(LockRequest.builder(key).waitTime(waitFor).build());
        long freedAfterMillis = Duration.ofNanos(System.nanoTime() - acquiredAt).toMillis();
        next.ifPresent(LockHandle::close);
        assertThat(next).as("another JVM took the key by %s ms after the acquisition (lockAtLeastFor %s)",
                lockAtLeastFor.plusMillis(3_500).toMillis(), lockAtLeastFor).isPresent();
        assertThat(freedAfterMillis).as("ms until another JVM took the key").isGreaterThanOrEqualTo(lockAtLeastFor.toMillis() - 5);
    }

    // ------------------------------------------------------------------ the local turn ends with the lease

    /**
     * A fixed lease runs out while its handle is still open: every other JVM may take the key now, and so may this
     * JVM's own waiting threads and asynchronous acquisitions, with or without local hand-offs. The old handle still
     * reports the loss at its release, and that release takes nothing from the next holder.
     */
    @Test
    void aFixedLeaseThatRanOutLetsTheJvmsOwnWaitersIn() throws Exception {
        for (boolean handOffs : new boolean[] {true, false}) {
            LockManager jvm = manager(newBackend(), b -> b.localHandOff(handOffs));
            String k = key + ":" + handOffs;
            LockHandle expired = jvm.acquire(LockRequest.builder(k).leaseTime(Duration.ofMillis(500)).waitTime(Duration.ZERO).build());
            CompletableFuture<LockHandle> async = acquireAsyncElsewhere(jvm, LockRequest.builder(k).waitTime(Duration.ofSeconds(15)).build());
            AtomicReference<Object> threadOutcome = new AtomicReference<>();
            CountDownLatch threadDone = new CountDownLatch(1);
            CountDownLatch threadMayRelease = new CountDownLatch(1);
            start(() -> {
                try (LockHandle mine = jvm.acquire(k, Duration.ofSeconds(15))) {
                    threadOutcome.set(mine.isHeld());
                    threadDone.countDown();
                    threadMayRelease.await(20, TimeUnit.SECONDS);
                } catch (RuntimeException | InterruptedException e) {
                    threadOutcome.set(e);
                    threadDone.countDown();
                }
            });
            LockHandle first;
            try {
                first = async.get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError("the JVM's own asynchronous waiter did not get the key within 10 s of the 500 ms "
                        + "lease running out, with the expired handle still open (local hand-offs " + handOffs + ")", e);
            }
            assertThat(expired.isHeld()).isFalse();
            assertThatThrownBy(expired::close).as("the expired handle's release").isInstanceOf(LockLostException.class);
            assertThat(first.isHeld()).as("the next holder, after the expired handle's release").isTrue();
            assertThat(manager().tryAcquire(k)).as("another JVM while the next holder holds it").isEmpty();
            first.close();
            assertThat(threadDone.await(10, TimeUnit.SECONDS)).as("the JVM's own waiting thread got its turn").isTrue();
            assertThat(threadOutcome.get()).as("the waiting thread's acquisition").isEqualTo(true);
            threadMayRelease.countDown();
        }
    }

    /**
     * A watched lease the store lost (the key deleted behind its holder's back) is reported lost; the JVM's own
     * waiter then gets the key without waiting for the old handle to be closed.
     */
    @Test
    void aLostLeaseLetsTheJvmsOwnWaiterIn() throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        LockManager jvm = manager(newBackend(), b -> b.leaseTime(Duration.ofMillis(900)).listener(losses(lost)));
        LockHandle holder = jvm.acquire(key, Duration.ZERO);
        CompletableFuture<LockHandle> waiter = acquireAsyncElsewhere(jvm, LockRequest.builder(key).waitTime(Duration.ofSeconds(20)).build());
        deleteKey(key);
        assertThat(lost.await(15, TimeUnit.SECONDS)).as("the loss reported to the holder").isTrue();
        try (LockHandle next = waiter.get(10, TimeUnit.SECONDS)) {
            assertThat(next.isHeld()).isTrue();
            assertThat(holder.isHeld()).isFalse();
            assertThatThrownBy(holder::close).as("the lost handle's release").isInstanceOf(LockLostException.class);
            assertThat(next.isHeld()).as("the next holder, after the lost handle's release").isTrue();
            assertThat(manager().tryAcquire(key)).as("another JVM while the next holder holds it").isEmpty();
        }
    }

    /** An operator's forced release in a single-instance application: the JVM's own waiter gets the key at once. */
    @Test
    void aForcedReleaseLetsTheJvmsOwnWaiterIn() throws Exception {
        RecordingBackend backend = newBackend();
        assumeTrue(backend.capabilities().holderInspection().isPresent(), "the store cannot force a release");
        LockManager jvm = manager(backend, b -> { });
        LockHandle stuck = jvm.acquire(key, Duration.ZERO);
        CompletableFuture<LockHandle> waiter = acquireAsyncElsewhere(jvm, LockRequest.builder(key).waitTime(Duration.ofSeconds(20)).build());
        assertThat(jvm.admin().forceRelease(key)).as("the holders removed").hasSize(1);
        // The watched lease is 30 s: its next renewal would come after 10 s, its release never.
        try (LockHandle next = waiter.get(5, TimeUnit.SECONDS)) {
            assertThat(stuck.isHeld()).isFalse();
            assertThatThrownBy(stuck::close).isInstanceOf(LockLostException.class).hasMessageContaining("forced release");
            assertThat(next.isHeld()).isTrue();
        }
    }

    @Test
    void aDeletedKeyIsReportedLostToItsHolder() throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofSeconds(1)).listener(losses(lost)));
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        deleteKey(key);
        assertThat(lost.await(10, TimeUnit.SECONDS)).as("listener told").isTrue();
        assertThat(lock.isHeld()).isFalse();
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        assertThatThrownBy(() -> locks.acquire(key, Duration.ZERO)).as("a lost lease is not re-entered").isInstanceOf(LockLostException.class);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class).hasMessageContaining("expired or was deleted");
        assertThat(locks.admin().heldLocks()).isEmpty();
    }

    // ------------------------------------------------------------------ stopping the work of a lost lease

    /**
     * Runs a section that blocks in a queue for a minute under {@code request} on a thread of its own; the future holds
     * what the section and its release saw, once both are done.
     */
    private CompletableFuture<String> blockedSection(LockManager locks, LockRequest request, CountDownLatch entered) {
        CompletableFuture<String> seen = new CompletableFuture<>();
        start(() -> {
            AtomicReference<String> inside = new AtomicReference<>("not run");
            String release;
            try {
                locks.withLock(request, () -> {
                    entered.countDown();
                    try {
                        new java.util.concurrent.ArrayBlockingQueue<String>(1).poll(60, TimeUnit.SECONDS);
                        inside.set("ran to its end");
                    } catch (InterruptedException e) {
                        inside.set("interrupted");
                    }
                    return null;
                });
                release = "release went through";
            } catch (LockLostException e) {
                release = "release reported the loss";
            } catch (RuntimeException e) {
                release = "release threw " + e;
            }
            seen.complete(inside.get() + "; " + release + (Thread.currentThread().isInterrupted() ? "; thread left interrupted" : ""));
        });
        return seen;
    }

    private LockRequest stoppingWork() {
        return LockRequest.builder(key).stopWorkOnLeaseLost(true).waitTime(Duration.ofSeconds(5)).build();
    }

    /** The key deleted behind the holder's back (a renewal, or the store's session, finds it): its section is interrupted. */
    @Test
    void aSectionThatStopsOnLeaseLostIsInterruptedWhenItsKeyIsDeleted() throws Exception {
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofMillis(900)));
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<String> seen = blockedSection(locks, stoppingWork(), entered);
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        deleteKey(key);

        assertThat(seen.get(15, TimeUnit.SECONDS)).isEqualTo("interrupted; release reported the loss");
    }

    /** Another JVM's forced release: the holder learns it (at once, or at its next renewal) and its section is interrupted. */
    @Test
    void anotherJvmsForcedReleaseInterruptsASectionThatStopsOnLeaseLost() throws Exception {
        assumeTrue(newBackend().capabilities().holderInspection().isPresent(), "the store cannot force a release");
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofSeconds(3)));
        LockManager operator = manager();
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<String> seen = blockedSection(locks, stoppingWork(), entered);
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        assertThat(operator.admin().forceRelease(key)).as("the holders removed").hasSize(1);

        // Within a renewal (1 s) where the store does not tell at once; generous for a loaded machine.
        assertThat(seen.get(15, TimeUnit.SECONDS)).isEqualTo("interrupted; release reported the loss");
        try (LockHandle next = operator.acquire(key, Duration.ZERO)) {
            assertThat(next.isHeld()).as("the key, free after the stopped section").isTrue();
        }
    }

    /** Without asking, a section runs on after its loss; only its release reports it. */
    @Test
    void aSectionThatDoesNotAskRunsOnAfterItsLoss() throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofMillis(900)).listener(losses(lost)));
        AtomicReference<String> inside = new AtomicReference<>();
        try {
            locks.withLock(LockRequest.builder(key).build(), () -> {
                deleteKey(key);
                assertThat(lost.await(15, TimeUnit.SECONDS)).as("the loss reported").isTrue();
                Thread.sleep(100);
                inside.set("ran to its end");
                return null;
            });
        } catch (LockLostException expected) {
            inside.set(inside.get() + "; release reported the loss");
        }
        assertThat(inside.get()).isEqualTo("ran to its end; release reported the loss");
    }

    /** An asynchronous holder's reaction (here cancelling its work) runs once when its key is deleted. */
    @Test
    void anAsynchronousHoldersReactionRunsWhenItsKeyIsDeleted() throws Exception {
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofMillis(900)));
        LockHandle held = locks.acquireAsync(LockRequest.builder(key).build()).get(10, TimeUnit.SECONDS);
        CompletableFuture<String> work = new CompletableFuture<>();
        AtomicInteger runs = new AtomicInteger();
        held.onLeaseLost(() -> {
            runs.incrementAndGet();
            work.cancel(false);
        });

        deleteKey(key);

        awaitTrue(Duration.ofSeconds(15), work::isCancelled);
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);
        assertThat(runs).hasValue(1);
    }

    /** The manager's shutdown ends its leases: a section that stops on lease lost is interrupted, and the key is free. */
    @Test
    void closingTheManagerInterruptsItsSectionsThatStopOnLeaseLost() throws Exception {
        LockManager locks = manager(newBackend(), b -> b.shutdownGracePeriod(Duration.ZERO));
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<String> seen = blockedSection(locks, stoppingWork(), entered);
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        locks.close();

        assertThat(seen.get(15, TimeUnit.SECONDS)).startsWith("interrupted; release ");
        assertFree(manager(), key, "after the shutdown freed what it held");
    }

    /** A clean release disarms the reaction: a later loss of the key (another holder's) stops nothing here. */
    @Test
    void aCleanReleaseLeavesNothingToStopWhenTheKeyIsLostLater() throws Exception {
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofMillis(900)));
        AtomicInteger runs = new AtomicInteger();
        LockHandle held = locks.acquire(stoppingWork());
        held.onLeaseLost(runs::incrementAndGet);
        held.close();
        LockManager next = manager(newBackend(), b -> b.leaseTime(Duration.ofMillis(900)));
        CountDownLatch nextLost = new CountDownLatch(1);
        LockHandle nextHeld = next.acquire(key, Duration.ofSeconds(5));
        nextHeld.onLeaseLost(nextLost::countDown);

        deleteKey(key);

        assertThat(nextLost.await(15, TimeUnit.SECONDS)).as("the next holder's loss, found").isTrue();
        assertThat(runs).as("the released holder's reaction").hasValue(0);
        assertThat(Thread.interrupted()).as("the released holder's thread").isFalse();
        assertThatThrownBy(nextHeld::close).isInstanceOf(LockLostException.class);
    }

    @Test
    void aWipedStoreIsReportedLostAndTheLogPolicyDoesNotThrow() throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        LockManager locks = manager(newBackend(), b -> b.leaseTime(Duration.ofSeconds(1))
                .leaseLostPolicy(LeaseLostPolicy.LOG).listener(losses(lost)));
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        wipeStore();
        assertThat(lost.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        lock.close();
        assertThat(lock.state()).isEqualTo(LockState.RELEASED);
    }

    @Test
    void aThrowingListenerNeverReachesTheCaller() {
        LockManager locks = manager(newBackend(), b -> b.listener(new LockListener() {
            @Override
            public void onAcquired(String lockName, String k, long fencingToken, Duration waited) {
                throw new IllegalStateException("listener bug");
            }

            @Override
            public void onReleased(String lockName, String k, Duration held) {
                throw new IllegalStateException("listener bug");
            }
        }));
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            assertThat(lock.isHeld()).isTrue();
        }
    }

    // ------------------------------------------------------------------ waiting

    @Test
    void aWaitEndsAtItsWaitTime() {
        LockManager holder = manager();
        LockManager waiter = manager();
        try (LockHandle lock = holder.acquire(key, Duration.ZERO)) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> waiter.acquire(key, Duration.ofMillis(300)))
                    .isInstanceOfSatisfying(LockNotAcquiredException.class, e -> {
                        assertThat(e.reason()).isEqualTo(LockNotAcquiredException.Reason.TIMEOUT);
                        assertThat(e.key()).isEqualTo(key);
                    });
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));
            assertThat(waiter.tryAcquire(key)).isEmpty();
            assertThat(lock.isHeld()).isTrue();
        }
    }

    @Test
    void aReleaseWakesTheWaiterLongBeforeTheLeaseRunsOut() throws Exception {
        aReleaseHandsTheKeyToTheWaiterWithinSeconds(waiter -> {
            CompletableFuture<LockHandle> next = new CompletableFuture<>();
            start(() -> {
                try {
                    next.complete(waiter.acquire(key, Duration.ofSeconds(25)));
                } catch (RuntimeException e) {
                    next.completeExceptionally(e);
                }
            });
            return next;
        });
    }

    @Test
    void anAsyncWaiterGetsTheKeyWhenItIsReleased() throws Exception {
        aReleaseHandsTheKeyToTheWaiterWithinSeconds(
                waiter -> waiter.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(25)).build()));
    }

    /** A waiter that {@code waitFor} starts is told "held"; the holder releases; the waiter has the key within seconds. */
    private void aReleaseHandsTheKeyToTheWaiterWithinSeconds(Function<LockManager, CompletableFuture<LockHandle>> waitFor)
            throws Exception {
        LockManager holder = manager();
        RecordingBackend waiterBackend = newBackend();
        LockManager waiter = manager(waiterBackend, b -> { });
        LockHandle lock = holder.acquire(key, Duration.ZERO);
        CompletableFuture<LockHandle> next = waitFor.apply(waiter);
        // Two "held" answers: the first attempt, and the retry right after subscribing.
        awaitTrue(Duration.ofSeconds(10), () -> waiterBackend.heldAnswers.get() >= 2);
        assertThat(next).as("the waiter while the key is held").isNotDone();
        long holdersToken = storeFences() ? lock.fencingToken() : 0;
        long releasedAt = System.nanoTime();
        lock.close();
        try (LockHandle taken = next.get(20, TimeUnit.SECONDS)) {
            // The holder's lease had 30 s left: only a release notice explains a grant within seconds.
            assertThat(System.nanoTime() - releasedAt).as("nanoseconds from the release to the grant").isLessThan(TimeUnit.SECONDS.toNanos(5));
            assertThat(taken.isHeld()).isTrue();
            if (storeFences()) {
                assertThat(taken.fencingToken()).as("the waiter's token").isGreaterThan(holdersToken);
            }
            assertThat(holder.tryAcquire(key)).as("the key while the waiter holds it").isEmpty();
        }
    }

    @Test
    void anInterruptEndsTheWaitAndLeavesNothingHeld() throws Exception {
        LockManager holder = manager();
        RecordingBackend waiterBackend = newBackend();
        LockManager waiter = manager(waiterBackend, b -> { });
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        AtomicBoolean stillInterrupted = new AtomicBoolean();
        try (LockHandle lock = holder.acquire(key, Duration.ZERO)) {
            Thread waiting = start(() -> {
                try {
                    waiter.acquire(key, Duration.ofSeconds(30)).close();
                } catch (Throwable t) {
                    outcome.set(t);
                    stillInterrupted.set(Thread.currentThread().isInterrupted());
                }
            });
            awaitTrue(Duration.ofSeconds(10), () -> waiterBackend.heldAnswers.get() >= 2);
            waiting.interrupt();
            waiting.join(10_000);
            assertThat(waiting.isAlive()).isFalse();
            assertThat(lock.isHeld()).isTrue();
        }
        assertThat(outcome.get()).isInstanceOfSatisfying(LockNotAcquiredException.class,
                e -> assertThat(e.reason()).isEqualTo(LockNotAcquiredException.Reason.INTERRUPTED));
        assertThat(stillInterrupted).as("interrupt status kept").isTrue();
        assertThat(waiter.admin().heldLocks()).isEmpty();
        assertFree(waiter, key, "the key is free");
    }

    @Test
    void anAbortConditionEndsTheWaitWithinItsCheckInterval() throws Exception {
        LockManager holder = manager();
        LockManager waiter = manager();
        AtomicBoolean soldOut = new AtomicBoolean();
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        AtomicLong endedAt = new AtomicLong();
        try (LockHandle lock = holder.acquire(key, Duration.ZERO)) {
            Thread waiting = start(() -> {
                try {
                    waiter.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(30)).abortIf(soldOut::get).build()).close();
                } catch (Throwable t) {
                    outcome.set(t);
                }
                endedAt.set(System.nanoTime());
            });
            sleep(300);
            long flippedAt = System.nanoTime();
            soldOut.set(true);
            waiting.join(10_000);
            // Far above the 100 ms check interval, for a loaded machine; far below the 30 s wait.
            assertThat(endedAt.get() - flippedAt).as("nanoseconds from the condition to the end of the wait")
                    .isLessThan(TimeUnit.SECONDS.toNanos(3));
            assertThat(lock.isHeld()).isTrue();
        }
        assertThat(outcome.get()).isInstanceOfSatisfying(LockNotAcquiredException.class,
                e -> assertThat(e.reason()).isEqualTo(LockNotAcquiredException.Reason.ABORTED));
    }

    @Test
    void anAbortRightAfterAcquiringReleasesTheKey() {
        LockManager locks = manager();
        AtomicInteger checks = new AtomicInteger();
        BooleanSupplier trueOnSecondCheck = () -> checks.incrementAndGet() >= 2;
        assertThat(locks.tryAcquire(LockRequest.builder(key).waitTime(Duration.ZERO).abortIf(trueOnSecondCheck).build())).isEmpty();
        assertThat(checks.get()).isEqualTo(2);
        assertFree(manager(), key, "the aborted acquisition released the key");
    }

    @Test
    void withLockRunsTheWorkHoldingTheKeyAndPassesCheckedExceptions() {
        LockManager locks = manager();
        LockManager other = manager();
        String result = locks.withLock(key, Duration.ZERO, () -> {
            assertThat(other.tryAcquire(key)).isEmpty();
            return "done";
        });
        assertThat(result).isEqualTo("done");
        assertThatThrownBy(() -> locks.withLock(key, Duration.ZERO, () -> {
            throw new IOException("checked");
        })).isInstanceOf(IOException.class);
        assertFree(other, key, "the key is free");
    }

    // ------------------------------------------------------------------ helpers

    /** Fails unless {@code locks} can take {@code key} at once; releases it again. */
    protected static void assertFree(LockManager locks, String key, String why) {
        Optional<LockHandle> taken = locks.tryAcquire(key);
        assertThat(taken).as(why).isPresent();
        taken.get().close();
    }

    /**
     * A store that keeps leases by its session: a watchdog lease of 300 ms stays held for a second (three
     * leases) with no renewal sent, and its release frees the key.
     */
    private void assertHeldBySessionWithoutRenewals() {
        RecordingBackend backend = newBackend();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(300)));
        LockManager other = manager();
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            sleep(1000);
            assertThat(lock.isHeld()).isTrue();
            assertThat(other.tryAcquire(key)).as("held after three leases' time").isEmpty();
        }
        assertThat(backend.renewals).as("renewals sent").isEmpty();
        assertThat(locks.admin().watchdogRenewCallCount()).isZero();
        assertFree(other, key, "the key is free");
    }

    /**
     * Fails unless {@code tokens} holds {@code expected} strictly increasing tokens; for a store without
     * fencing, unless it holds none (each handle refused to give one, checked where it was asked).
     */
    protected void assertTokens(List<Long> tokens, int expected) {
        if (storeFences()) {
            assertThat(tokens).hasSize(expected);
            assertStrictlyIncreasing(tokens);
        } else {
            assertThat(tokens).as("tokens from a store without fencing").isEmpty();
        }
    }

    /** Fails unless {@code tokens} strictly increase. */
    protected static void assertStrictlyIncreasing(List<Long> tokens) {
        for (int i = 1; i < tokens.size(); i++) {
            assertThat(tokens.get(i)).as("fencing token %d of %d", i, tokens.size()).isGreaterThan(tokens.get(i - 1));
        }
    }

    /** Polls {@code condition} every 10 ms until it holds; fails after {@code timeout}. */
    protected static void awaitTrue(Duration timeout, BooleanSupplier condition) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("condition not met within " + timeout);
            }
            sleep(10);
        }
    }

    /**
     * {@code jvm.acquireAsync(request)} called on another thread than the test's (which may hold the key already, and
     * would re-enter it), returning once the acquisition is queued.
     */
    protected static CompletableFuture<LockHandle> acquireAsyncElsewhere(LockManager jvm, LockRequest request) {
        return CompletableFuture.supplyAsync(() -> jvm.acquireAsync(request)).join();
    }

    /** Starts {@code work} on a thread that the suite interrupts after the test. */
    protected Thread start(Runnable work) {
        Thread thread = new Thread(work, "contract-" + key);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
        return thread;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    private static LockListener renewals(AtomicInteger renewed) {
        return new LockListener() {
            @Override
            public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
                if (outcome == RenewalOutcome.RENEWED) {
                    renewed.incrementAndGet();
                }
            }
        };
    }

    /** A listener that counts {@code lost} down at each lease lost. */
    private static LockListener losses(CountDownLatch lost) {
        return new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                lost.countDown();
            }
        };
    }

    private static LockListener losses(AtomicInteger lost) {
        return new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                lost.incrementAndGet();
            }
        };
    }
}
