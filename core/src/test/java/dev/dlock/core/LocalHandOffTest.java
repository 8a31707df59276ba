package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseNotices;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * A released exclusive lease passes straight to the next thread of the same JVM waiting for the key: one
 * store call, a fresh fencing token, the next holder's own store owner. What users rely on must still hold: one holder at
 * a time, tokens increasing in the order of the sections, a lost lease reported to its holder and never
 * passed on, the next holder's own lease, and other JVMs getting the key after a bounded streak once they ask.
 */
class LocalHandOffTest {

    /** Threads queued behind a holder in the streak tests: a full streak and a few more. */
    private static final int SUCCESSORS = LockManager.MAX_LOCAL_HAND_OFFS + 3;

    @Test
    void threadsOfOneJvmPassTheKeyOnWithIncreasingTokensOneAtATime() throws Exception {
        RecordingBackend store = new RecordingBackend(new InMemoryLockBackend());
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        List<Long> tokens = new ArrayList<>();
        try (LockManager locks = LockManager.builder(store).build()) {
            ExecutorService threads = Executors.newFixedThreadPool(8);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                done.add(threads.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        try (LockHandle lock = locks.acquire("hot", Duration.ofSeconds(30))) {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            synchronized (tokens) {
                                tokens.add(lock.fencingToken());
                            }
                            Thread.yield();
                            inside.decrementAndGet();
                        }
                    }
                }));
            }
            for (Future<?> future : done) {
                future.get(60, TimeUnit.SECONDS);
            }
            threads.shutdown();
        }
        assertThat(overlaps).as("sections that overlapped").hasValue(0);
        assertThat(tokens).hasSize(1_600);
        for (int i = 1; i < tokens.size(); i++) {
            assertThat(tokens.get(i)).as("token of section " + i).isGreaterThan(tokens.get(i - 1));
        }
        long handOffs = store.passes.stream().filter("handOff"::equals).count();
        assertThat(handOffs).as("hand-offs among 8 threads contending for one key").isPositive();
        assertThat(store.acquires.get() + handOffs).as("store acquisitions + hand-offs").isGreaterThanOrEqualTo(1_600);
    }

    @Test
    void withNobodyElseAskingTheKeyPassesOnForAsLongAsLocalThreadsQueue() throws Exception {
        RecordingBackend store = new RecordingBackend(new InMemoryLockBackend());
        try (LockManager locks = LockManager.builder(store).build()) {
            passAmongQueuedThreads(locks, store, 11);
        }
        assertThat(store.passes).as("each release of a lease with a queued successor")
                .containsExactlyElementsOf(repeat("handOff", 11, "release"));
    }

    @Test
    void onceAnotherJvmAsksTheKeyIsFreedForItAfterABoundedStreak() throws Exception {
        InMemoryLockBackend shared = new InMemoryLockBackend();
        RecordingBackend store = new RecordingBackend(shared);
        try (LockManager locks = LockManager.builder(store).build(); LockManager otherJvm = LockManager.builder(shared).build()) {
            passAmongQueuedThreads(locks, store, SUCCESSORS, () -> assertThat(otherJvm.tryAcquire("hot")).isEmpty());
        }
        List<String> expected = new ArrayList<>(repeat("handOff", LockManager.MAX_LOCAL_HAND_OFFS, "release"));
        // Freed once: the next holder took it from the store, where nobody else asks any more.
        expected.addAll(repeat("handOff", SUCCESSORS - LockManager.MAX_LOCAL_HAND_OFFS - 1, "release"));
        assertThat(store.passes).as("the releases after the other JVM was refused").containsExactlyElementsOf(expected);
    }

    @Test
    void whenAStreakEndsForAnotherJvmItsWaiterGetsTheFreedKeyBeforeThisJvmAsksAgain() throws Exception {
        InMemoryLockBackend shared = new InMemoryLockBackend();
        // The other JVM learns of a release a hop later than this JVM's own waiters do, as over a store's notices.
        RecordingBackend otherStore = new RecordingBackend(shared);
        ScheduledExecutorService hop = Executors.newSingleThreadScheduledExecutor();
        otherStore.alterCapabilities(declared -> declared.withReleaseNotices(oneHopLater(declared.releaseNotices().orElseThrow(), hop)));
        List<String> holders = Collections.synchronizedList(new ArrayList<>());
        // Far wider than the hop, for a loaded machine; the last local holders wait it out, so it is the test's length.
        try (LockManager locks = LockManager.builder(shared).holdBackAfterStreak(Duration.ofSeconds(2)).build();
             LockManager otherJvm = LockManager.builder(otherStore).build()) {
            LockHandle first = locks.acquire("hot", Duration.ofSeconds(5));
            ExecutorService threads = Executors.newFixedThreadPool(SUCCESSORS + 1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < SUCCESSORS; t++) {
                done.add(threads.submit(() -> {
                    try (LockHandle lock = locks.acquire("hot", Duration.ofSeconds(30))) {
                        holders.add("this");
                    }
                    return null;
                }));
            }
            EngineTestSupport.await(SUCCESSORS + " threads queued for the key", Duration.ofSeconds(10),
                    () -> EngineTestSupport.threadsWaitingForTheTurn() >= SUCCESSORS);
            done.add(threads.submit(() -> {
                try (LockHandle lock = otherJvm.acquire("hot", Duration.ofSeconds(30))) {
                    holders.add("other");
                }
                return null;
            }));
            // Once the other JVM's waiter sleeps until a release notice, it has asked the store and marked the key.
            awaitThreadIn(KeyNotices.class, "awaitNotices");
            first.close();
            for (Future<?> future : done) {
                future.get(60, TimeUnit.SECONDS);
            }
            threads.shutdown();
        } finally {
            hop.shutdownNow();
        }
        List<String> expected = new ArrayList<>(Collections.nCopies(LockManager.MAX_LOCAL_HAND_OFFS, "this"));
        expected.add("other");
        expected.addAll(Collections.nCopies(SUCCESSORS - LockManager.MAX_LOCAL_HAND_OFFS, "this"));
        assertThat(holders).as("holders in order: a streak of local hand-offs, then the freed key goes to the other JVM's waiter")
                .containsExactlyElementsOf(expected);
    }

    @Test
    void aWaiterInterruptedWhileItsJvmHoldsBackGivesUpAndTheOthersStillGetTheKey() throws Exception {
        InMemoryLockBackend shared = new InMemoryLockBackend();
        RecordingBackend store = new RecordingBackend(shared);
        List<Object> outcomes = Collections.synchronizedList(new ArrayList<>());
        try (LockManager locks = LockManager.builder(store).holdBackAfterStreak(Duration.ofSeconds(2)).build();
             LockManager otherJvm = LockManager.builder(shared).build()) {
            LockHandle first = locks.acquire("hot", Duration.ofSeconds(5));
            ExecutorService threads = Executors.newFixedThreadPool(SUCCESSORS);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < SUCCESSORS; t++) {
                done.add(threads.submit(() -> {
                    try (LockHandle lock = locks.acquire("hot", Duration.ofSeconds(30))) {
                        outcomes.add("held");
                    } catch (LockNotAcquiredException e) {
                        outcomes.add(e.reason());
                    }
                    return null;
                }));
            }
            EngineTestSupport.await(SUCCESSORS + " threads queued for the key", Duration.ofSeconds(10),
                    () -> EngineTestSupport.threadsWaitingForTheTurn() >= SUCCESSORS);
            // The other JVM asks once and leaves: the streak ends for it, and this JVM holds back for nobody.
            assertThat(otherJvm.tryAcquire("hot")).isEmpty();
            first.close();
            Thread heldBack = awaitThreadIn(KeyNotices.class, "awaitNotices");
            heldBack.interrupt();
            for (Future<?> future : done) {
                future.get(60, TimeUnit.SECONDS);
            }
            threads.shutdown();
            EngineTestSupport.assertFree(locks, "hot", "the key after every holder released");
        }
        assertThat(outcomes).as("the waiter interrupted while held back gives up; the others hold the key after the pause")
                .containsOnlyOnce(LockNotAcquiredException.Reason.INTERRUPTED)
                .filteredOn("held"::equals).hasSize(SUCCESSORS - 1);
        assertThat(store.passes.subList(0, LockManager.MAX_LOCAL_HAND_OFFS + 1)).as("the streak, then the key freed in the store")
                .containsExactlyElementsOf(repeat("handOff", LockManager.MAX_LOCAL_HAND_OFFS, "release"));
    }

    /** The first thread found inside {@code type.method}, waiting up to 10 s. */
    private static Thread awaitThreadIn(Class<?> type, String method) {
        Thread[] found = new Thread[1];
        EngineTestSupport.await("a thread in " + type.getSimpleName() + "." + method, Duration.ofSeconds(10), () -> {
            found[0] = Thread.getAllStackTraces().keySet().stream()
                    .filter(thread -> EngineTestSupport.isIn(thread, type, method)).findFirst().orElse(null);
            return found[0] != null;
        });
        return found[0];
    }

    /** {@code notices} delivered 50 ms late on {@code hop}'s thread. */
    private static ReleaseNotices oneHopLater(ReleaseNotices notices, ScheduledExecutorService hop) {
        return (key, onRelease) -> notices.subscribe(key, () -> hop.schedule(onRelease, 50, TimeUnit.MILLISECONDS));
    }

    private static void passAmongQueuedThreads(LockManager locks, RecordingBackend store, int successors) throws Exception {
        passAmongQueuedThreads(locks, store, successors, () -> { });
    }

    /**
     * Holds the key while {@code successors} threads queue for it, runs {@code whileHeld}, then lets each holder
     * release at once: every release but the last finds a queued successor.
     */
    private static void passAmongQueuedThreads(LockManager locks, RecordingBackend store, int successors, Runnable whileHeld)
            throws Exception {
        LockHandle first = locks.acquire("hot", Duration.ofSeconds(5));
        ExecutorService threads = Executors.newFixedThreadPool(successors);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < successors; t++) {
            done.add(threads.submit(() -> {
                locks.acquire("hot", Duration.ofSeconds(30)).close();
                return null;
            }));
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (EngineTestSupport.threadsWaitingForTheTurn() < successors) {
            assertThat(System.nanoTime()).as(successors + " threads queued for the key").isLessThan(deadline);
            Thread.sleep(5);
        }
        whileHeld.run();
        first.close();
        for (Future<?> future : done) {
            future.get(30, TimeUnit.SECONDS);
        }
        threads.shutdown();
    }

    private static List<String> repeat(String event, int times, String last) {
        List<String> events = new ArrayList<>(java.util.Collections.nCopies(times, event));
        events.add(last);
        return events;
    }

    @Test
    void aLeaseLostBeforeItsReleaseIsReportedAndTheNextLocalHolderGetsTheKeyOnlyFromTheStore() throws Exception {
        AtomicLong clock = new AtomicLong();
        InMemoryLockBackend shared = InMemoryLockBackend.builder().clock(clock::get).build();
        RecordingBackend store = new RecordingBackend(shared);
        try (LockManager locks = LockManager.builder(store).build(); LockManager otherJvm = LockManager.builder(shared).build()) {
            LockRequest fixed = LockRequest.builder("k").leaseTime(Duration.ofSeconds(1)).waitTime(Duration.ofSeconds(30)).build();
            LockHandle first = locks.acquire(fixed);
            ExecutorService next = Executors.newSingleThreadExecutor();
            Future<Long> successor = next.submit(() -> {
                try (LockHandle lock = locks.acquire(fixed)) {
                    return lock.fencingToken();
                }
            });
            awaitQueued(locks, store);
            // The store's clock passes the lease: another JVM takes the key while the first holder still runs.
            clock.addAndGet(TimeUnit.SECONDS.toNanos(2));
            LockHandle taker = otherJvm.tryAcquire("k").orElseThrow();
            assertThatThrownBy(first::close).isInstanceOf(LockLostException.class);
            assertThat(store.passes).as("the lost lease's release tried to pass it on and was refused").containsExactly("handOff");
            Thread.sleep(50);
            assertThat(successor).as("the next local holder waits for the other JVM").isNotDone();
            long takerToken = taker.fencingToken();
            taker.close();
            assertThat(successor.get(10, TimeUnit.SECONDS)).isGreaterThan(takerToken);
            next.shutdown();
        }
    }

    @Test
    void theNextHolderGetsItsOwnFixedLeaseOrKeepsTheWatchdogLeaseAsTheStoreHasIt() throws Exception {
        AtomicLong clock = new AtomicLong();
        InMemoryLockBackend shared = InMemoryLockBackend.builder().clock(clock::get).build();
        RecordingBackend store = new RecordingBackend(shared);
        try (LockManager locks = LockManager.builder(store).leaseTime(Duration.ofSeconds(30)).build()) {
            ExecutorService next = Executors.newSingleThreadExecutor();

            // A watchdog lease passed to a watchdog lease of the same length: the store's expiry stays as it was.
            LockHandle first = locks.acquire("k", Duration.ofSeconds(5));
            Future<LockHandle> watched = next.submit(() -> locks.acquire("k", Duration.ofSeconds(30)));
            awaitQueued(locks, store);
            clock.addAndGet(TimeUnit.SECONDS.toNanos(10));
            first.close();
            LockHandle second = watched.get(10, TimeUnit.SECONDS);
            assertThat(store.passes).containsExactly("handOff");
            assertThat(remainingTtl(shared)).as("the store's expiry, kept").isEqualTo(20_000);

            // To a fixed lease: the store holds the key for exactly that lease from the hand-off.
            LockRequest fixed = LockRequest.builder("k").leaseTime(Duration.ofSeconds(7)).waitTime(Duration.ofSeconds(30)).build();
            // Another thread: the one that holds the key now would re-enter it.
            ExecutorService third = Executors.newSingleThreadExecutor();
            Future<LockHandle> fixedHolder = third.submit(() -> locks.acquire(fixed));
            awaitQueued(locks, store);
            second.close();
            fixedHolder.get(10, TimeUnit.SECONDS);
            assertThat(store.passes).containsExactly("handOff", "handOff");
            assertThat(remainingTtl(shared)).as("the fixed lease, set").isEqualTo(7_000);
            fixedHolder.get().close();
            next.shutdown();
            third.shutdown();
        }
    }

    /** What another JVM sees of the key: the holder's remaining lease in ms. */
    private static long remainingTtl(InMemoryLockBackend store) {
        AcquireResult answer = store.tryAcquire(LockKind.EXCLUSIVE, "k", "someone-else", 1_000);
        assertThat(answer).isInstanceOf(AcquireResult.Held.class);
        return ((AcquireResult.Held) answer).remainingTtlMillis();
    }

    /** Waits until a second thread queues for the key's turn behind its holder. */
    private static void awaitQueued(LockManager locks, RecordingBackend store) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int acquiresBefore = store.acquires.get();
        while (!someThreadWaitsForTheTurn()) {
            assertThat(System.nanoTime()).as("a second thread queued for the key").isLessThan(deadline);
            Thread.sleep(5);
        }
        assertThat(store.acquires.get()).as("a queued thread does not ask the store").isEqualTo(acquiresBefore);
    }

    private static boolean someThreadWaitsForTheTurn() {
        return EngineTestSupport.threadsWaitingForTheTurn() > 0;
    }
}
