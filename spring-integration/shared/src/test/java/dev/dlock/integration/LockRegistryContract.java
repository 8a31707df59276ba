package dev.dlock.integration;

import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.Concurrently;
import dev.dlock.testkit.OverlapDetector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The {@link Lock} contract as Spring Integration's Redis and JDBC registries keep it, on a real store: who may unlock,
 * re-entry, {@code tryLock} with and without a time, interruptible and uninterruptible waits, mutual exclusion across
 * two registries on two lock managers (two JVMs), a lost lease reported at unlock, and fencing tokens. Each store
 * extends it with {@link #newBackend()}.
 */
abstract class LockRegistryContract {

    /** Short enough for a forced release to reach the holder at its next renewal within the test. */
    private static final Duration WATCHDOG_LEASE = Duration.ofSeconds(3);
    private static final Duration PATIENCE = Duration.ofSeconds(30);
    private static final String REGISTRY_KEY = "contract";

    private LockManager firstManager;
    private LockManager secondManager;
    /** The registry under test, and the same registry key in "another JVM" (another manager). */
    protected DlockLockRegistry registry;
    protected DlockLockRegistry other;
    protected String key;

    /** A backend for one more lock manager over the test's store: a client of its own where the store has clients. */
    protected abstract LockBackend newBackend();

    /** Closes what {@link #newBackend()} opened, once the managers over it are closed. */
    protected void closeClients() {
    }

    @BeforeEach
    void twoRegistriesOnTwoManagers() {
        firstManager = LockManager.builder(newBackend()).instanceId("first").leaseTime(WATCHDOG_LEASE).build();
        secondManager = LockManager.builder(newBackend()).instanceId("second").leaseTime(WATCHDOG_LEASE).build();
        registry = new DlockLockRegistry(firstManager, REGISTRY_KEY);
        other = new DlockLockRegistry(secondManager, REGISTRY_KEY);
        key = "order-" + UUID.randomUUID();
    }

    /** Whether the store issues fencing tokens (memcached does not: the token comparisons are left out there). */
    protected boolean fences() {
        return firstManager.capabilities().fencing();
    }

    @AfterEach
    void closeManagers() throws Exception {
        for (LockManager manager : new LockManager[] {firstManager, secondManager}) {
            if (manager != null) {
                manager.close(Duration.ZERO);
                manager.backend().close();
            }
        }
        closeClients();
    }

    @Test
    void onlyTheLockingThreadMayUnlockAndAnotherThreadsUnlockChangesNothing() throws Exception {
        Lock lock = registry.obtain(key);
        lock.lock();

        Throwable fromOtherThread = CompletableFuture.supplyAsync(() -> {
            try {
                lock.unlock();
                return null;
            } catch (Throwable e) {
                return e;
            }
        }).get(30, TimeUnit.SECONDS);

        assertThat(fromOtherThread).as("another thread's unlock").isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("does not hold");
        assertThat(other.obtain(key).tryLock()).as("another JVM's tryLock after the refused unlock").isFalse();
        assertThat(onAnotherThread(() -> registry.obtain(key).tryLock())).as("another thread's tryLock").isFalse();
        lock.unlock();
        assertThat(lockAndUnlock(other.obtain(key))).as("another JVM after the owner's unlock").isTrue();
    }

    @Test
    void anUnlockWithoutALockThrowsIllegalState() {
        assertThatThrownBy(() -> registry.obtain(key).unlock()).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void theLockingThreadReentersAndOnlyTheBalancingUnlockFreesTheKey() throws Exception {
        DlockLock lock = registry.obtain(key);
        lock.lock();
        lock.lockInterruptibly();
        assertThat(lock.tryLock()).isTrue();
        assertThat(lock.tryLock(1, TimeUnit.SECONDS)).isTrue();
        long token = fences() ? lock.fencingToken() : -1;

        for (int i = 0; i < 3; i++) {
            lock.unlock();
            assertThat(lock.isHeldByCurrentThread()).as("held after %s of 4 unlocks", i + 1).isTrue();
            if (fences()) {
                assertThat(lock.fencingToken()).as("the token of the one hold").isEqualTo(token);
            }
            assertThat(other.obtain(key).tryLock()).as("another JVM after %s of 4 unlocks", i + 1).isFalse();
        }
        lock.unlock();

        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThat(lockAndUnlock(other.obtain(key))).as("another JVM after the balancing unlock").isTrue();
        assertThatThrownBy(lock::unlock).as("a fifth unlock").isInstanceOf(IllegalStateException.class);
    }

    @Test
    void locksOfOneKeyAreEqualAndOneUnlocksWhatTheOtherLocked() {
        DlockLock first = registry.obtain(key);
        DlockLock second = registry.obtain(key);
        assertThat(first).isEqualTo(second).hasSameHashCodeAs(second).isNotEqualTo(registry.obtain(key + "-other"))
                .isNotEqualTo(other.obtain(key));

        first.lock();
        assertThat(second.isHeldByCurrentThread()).isTrue();
        second.unlock();
        assertThat(first.isHeldByCurrentThread()).isFalse();
    }

    @Test
    void tryLockWithoutATimeAnswersAtOnceWhoeverHoldsTheKey() throws Exception {
        Lock lock = registry.obtain(key);
        lock.lock();
        try {
            assertThat(onAnotherThread(() -> registry.obtain(key).tryLock())).as("another thread of this JVM").isFalse();
            assertThat(other.obtain(key).tryLock()).as("another JVM").isFalse();
        } finally {
            lock.unlock();
        }
        assertThat(lockAndUnlock(other.obtain(key))).isTrue();
    }

    @Test
    void tryLockWithATimeWaitsAtLeastThatLongAndAnswersFalse() throws Exception {
        Lock held = other.obtain(key);
        held.lock();
        try {
            long start = System.nanoTime();
            assertThat(registry.obtain(key).tryLock(300, TimeUnit.MILLISECONDS)).isFalse();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("the wait").isGreaterThanOrEqualTo(Duration.ofMillis(300));
            assertThat(registry.obtain(key).tryLock(-1, TimeUnit.SECONDS)).as("a negative time tries once").isFalse();
        } finally {
            held.unlock();
        }
    }

    @Test
    void tryLockWithATimeGetsTheKeyWhenItsHolderReleasesIt() throws Exception {
        Lock held = other.obtain(key);
        held.lock();
        CountDownLatch waiting = new CountDownLatch(1);
        CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() -> {
            waiting.countDown();
            return lockAndUnlockWithin(registry.obtain(key), PATIENCE);
        });
        waiting.await();
        held.unlock();
        assertThat(waiter.get(60, TimeUnit.SECONDS)).as("the waiter's tryLock(30 s)").isTrue();
    }

    @Test
    void lockInterruptiblyStopsWaitingWhenInterruptedAndHoldsNothing() throws Exception {
        assertInterruptible(lock -> {
            lock.lockInterruptibly();
            return true;
        });
    }

    @Test
    void tryLockWithATimeStopsWaitingWhenInterruptedAndHoldsNothing() throws Exception {
        assertInterruptible(lock -> lock.tryLock(60, TimeUnit.SECONDS));
    }

    @Test
    void anInterruptStatusSetOnEntryFailsInterruptibleLockingAtOnceEvenForAFreeKey() throws Exception {
        DlockLock lock = registry.obtain(key);
        Thread.currentThread().interrupt();
        assertThatThrownBy(lock::lockInterruptibly).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).as("interrupt status after the InterruptedException").isFalse();
        Thread.currentThread().interrupt();
        assertThatThrownBy(() -> lock.tryLock(1, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        assertThat(lock.isHeldByCurrentThread()).isFalse();

        Thread.currentThread().interrupt();
        try {
            assertThat(lock.tryLock()).as("tryLock() ignores the interrupt status").isTrue();
            assertThat(Thread.currentThread().isInterrupted()).as("and keeps it").isTrue();
        } finally {
            Thread.interrupted();
            lock.unlock();
        }
    }

    @Test
    void lockIsDeafToInterruptsAndKeepsTheStatusForTheCaller() throws Exception {
        Lock held = other.obtain(key);
        held.lock();
        AtomicBoolean interruptedAfterLock = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            Lock lock = registry.obtain(key);
            try {
                lock.lock();
                interruptedAfterLock.set(Thread.currentThread().isInterrupted());
                lock.unlock();
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "deaf-waiter");
        waiter.start();
        awaitWaiting(waiter);
        waiter.interrupt();
        // Still waiting after the interrupt (back asleep, not returned):
        awaitWaiting(waiter);
        assertThat(waiter.isAlive()).as("lock() returned on an interrupt").isTrue();
        held.unlock();
        waiter.join(PATIENCE.toMillis());

        assertThat(waiter.isAlive()).as("the waiter still waits after the release").isFalse();
        assertThat(failure.get()).as("what lock() threw").isNull();
        assertThat(interruptedAfterLock.get()).as("the interrupt status once lock() returned").isTrue();
    }

    @Test
    void holdersOfTwoRegistriesOnTwoManagersNeverOverlap() throws Exception {
        OverlapDetector detector = new OverlapDetector();
        int threads = 4;
        int calls = 25;
        Concurrently.run(threads, calls, Duration.ofSeconds(120), () -> {
            DlockLock lock = (ThreadLocalRandom.current().nextBoolean() ? registry : other).obtain(key);
            try {
                if (ThreadLocalRandom.current().nextBoolean()) {
                    lock.lock();
                } else if (!lock.tryLock(60, TimeUnit.SECONDS)) {
                    throw new AssertionError("tryLock(60 s) gave up");
                }
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            try {
                detector.enter();
                detector.incrementUnsafely();
                detector.exit();
            } finally {
                lock.unlock();
            }
        });
        assertThat(detector.overlaps()).as("holders inside at once").isZero();
        assertThat(detector.counter()).as("increments kept").isEqualTo(threads * calls);
    }

    @Test
    void aFixedLeaseThatRanOutFailsReentryAndTheUnlockAndLetsOthersIn() throws Exception {
        DlockLock lock = registry.obtain(key);
        assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(300))).isTrue();
        long token = fences() ? lock.fencingToken() : -1;

        // The proof that the lease ran out in the store: another JVM takes the key while this thread still "holds" it.
        DlockLock next = other.obtain(key);
        assertThat(next.tryLock(PATIENCE.toMillis(), TimeUnit.MILLISECONDS)).as("another JVM after the TTL").isTrue();
        if (fences()) {
            assertThat(next.fencingToken()).as("the next holder's token").isGreaterThan(token);
        }
        // And another thread of this JVM, once the other JVM let go: the lost hold keeps nobody out.
        next.unlock();
        assertThat(onAnotherThread(() -> lockAndUnlockWithin(registry.obtain(key), PATIENCE)))
                .as("another thread of this JVM while the lost hold is not unlocked").isTrue();

        assertThat(lock.isHeldByCurrentThread()).isTrue();
        assertThat(lock.isLeaseHeld()).isFalse();
        assertThatThrownBy(lock::lock).as("re-entering the lost hold").isInstanceOf(ConcurrentModificationException.class)
                .hasCauseInstanceOf(LockLostException.class);
        assertThatThrownBy(lock::unlock).as("the unlock of the lost hold").isInstanceOf(ConcurrentModificationException.class)
                .hasMessageContaining("Lock was released in the store").hasCauseInstanceOf(LockLostException.class);
        assertThat(lock.isHeldByCurrentThread()).as("held after the failed unlock").isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aWatchedLeaseTakenByAForcedReleaseIsReportedToTheHolderAtUnlock() throws Exception {
        DlockLock lock = registry.obtain(key);
        lock.lock();
        assertThat(secondManager.admin().forceRelease(REGISTRY_KEY, REGISTRY_KEY + ":" + key)).as("holders removed").hasSize(1);
        DlockLock next = other.obtain(key);
        assertThat(next.tryLock(PATIENCE.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (lock.isLeaseHeld() && System.nanoTime() - deadline < 0) {
            Thread.sleep(20);
        }
        assertThat(lock.isLeaseHeld()).as("the holder knows its lease is gone within " + PATIENCE).isFalse();
        assertThatThrownBy(() -> registry.renewLock(key)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(lock::unlock).isInstanceOf(ConcurrentModificationException.class)
                .hasCauseInstanceOf(LockLostException.class);
        assertThat(other.obtain(key).isLeaseHeld()).as("the new holder is untouched").isTrue();
        next.unlock();
    }

    @Test
    void aWatchedLeaseOutlivesManyLeaseTimes() throws Exception {
        DlockLock lock = registry.obtain(key);
        lock.lock();
        try {
            long until = System.nanoTime() + WATCHDOG_LEASE.multipliedBy(2).toNanos();
            while (System.nanoTime() - until < 0) {
                assertThat(other.obtain(key).tryLock()).as("another JVM while the lease is renewed").isFalse();
                Thread.sleep(200);
            }
            registry.renewLock(key);
            registry.renewLock(key, Duration.ofMinutes(1));
            assertThat(lock.isLeaseHeld()).isTrue();
        } finally {
            lock.unlock();
        }
    }

    @Test
    void renewLockNeedsAHoldOfTheCallingThread() throws Exception {
        assertThatThrownBy(() -> registry.renewLock(key)).isInstanceOf(IllegalStateException.class);
        DlockLock lock = registry.obtain(key);
        lock.lock(Duration.ofSeconds(30));
        try {
            assertThat(onAnotherThread(() -> {
                try {
                    registry.renewLock(key);
                    return null;
                } catch (IllegalStateException e) {
                    return e;
                }
            })).as("renewLock on a thread that does not hold it").isInstanceOf(IllegalStateException.class);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A hold taken with a TTL is renewed by {@code renewLock(key)} for that TTL from now, again and again: another JVM
     * stays out for three TTLs, and the unlock frees the key at once.
     */
    @Test
    void renewLockKeepsATtlHoldPastItsTtl() throws Exception {
        DlockLock lock = registry.obtain(key);
        Duration ttl = Duration.ofMillis(1_500);
        assertThat(lock.tryLock(Duration.ZERO, ttl)).isTrue();
        try {
            long until = System.nanoTime() + ttl.multipliedBy(3).toNanos();
            while (System.nanoTime() - until < 0) {
                registry.renewLock(key);
                assertThat(other.obtain(key).tryLock()).as("another JVM while the TTL hold is renewed").isFalse();
                Thread.sleep(300);
            }
            assertThat(lock.isLeaseHeld()).isTrue();
        } finally {
            lock.unlock();
        }
        assertThat(onAnotherThread(() -> lockAndUnlockWithin(other.obtain(key), Duration.ZERO))).as("after the unlock").isTrue();
    }

    /** {@code renewLock(key, ttl)} gives a TTL hold the new TTL: kept past the old one, and renewed for it from then on. */
    @Test
    void renewLockWithATtlKeepsTheHoldForTheNewTtl() throws Exception {
        DlockLock lock = registry.obtain(key);
        Duration ttl = Duration.ofMillis(500);
        lock.lock(ttl);
        try {
            registry.renewLock(key, Duration.ofSeconds(30));
            DlockLock contender = other.obtain(key);
            assertThat(contender.tryLock(ttl.multipliedBy(5).toMillis(), TimeUnit.MILLISECONDS))
                    .as("another JVM within five of the old TTLs").isFalse();
            registry.renewLock(key);
            assertThat(contender.tryLock(ttl.multipliedBy(3).toMillis(), TimeUnit.MILLISECONDS))
                    .as("another JVM after renewLock(key) kept the new TTL").isFalse();
            assertThat(lock.isLeaseHeld()).isTrue();
        } finally {
            lock.unlock();
        }
    }

    /**
     * {@code renewLock(key, ttl)} to a shorter TTL: once it ends, this JVM's own thread waiting for the key takes it, as
     * another JVM could, instead of sleeping until the old TTL would have ended.
     */
    @Test
    void renewLockToAShorterTtlLetsTheJvmsOwnWaiterInWhenTheShortTtlEnds() throws Exception {
        DlockLock lock = registry.obtain(key);
        lock.lock(Duration.ofSeconds(60));
        CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() ->
                lockAndUnlockWithin(registry.obtain(key), Duration.ofSeconds(50)));
        registry.renewLock(key, Duration.ofMillis(400));
        assertThat(waiter.get(20, TimeUnit.SECONDS)).as("this JVM's waiter within 20 s of the shortening to 400 ms").isTrue();
        assertThatThrownBy(lock::unlock).as("the unlock of the hold whose short TTL ran out")
                .isInstanceOf(ConcurrentModificationException.class).hasCauseInstanceOf(LockLostException.class);
    }

    /** A TTL hold that ran out cannot be renewed: renewLock throws, and the JVM that took the key keeps it. */
    @Test
    void renewLockOfATtlHoldThatRanOutThrowsAndRevivesNothing() throws Exception {
        DlockLock lock = registry.obtain(key);
        assertThat(lock.tryLock(Duration.ZERO, Duration.ofMillis(300))).isTrue();
        DlockLock next = other.obtain(key);
        assertThat(next.tryLock(PATIENCE.toMillis(), TimeUnit.MILLISECONDS)).as("another JVM after the TTL").isTrue();
        assertThatThrownBy(() -> registry.renewLock(key)).isInstanceOf(IllegalStateException.class)
                .hasCauseInstanceOf(LockLostException.class);
        assertThatThrownBy(() -> registry.renewLock(key, Duration.ofMinutes(1))).isInstanceOf(IllegalStateException.class);
        assertThat(next.isLeaseHeld()).as("the next holder").isTrue();
        assertThat(onAnotherThread(() -> registry.obtain(key).tryLock())).as("this JVM's other threads while the next holds it")
                .isFalse();
        assertThatThrownBy(lock::unlock).isInstanceOf(ConcurrentModificationException.class);
        next.unlock();
    }

    @Test
    void fencingTokensGrowFromHoldToHoldAcrossRegistries() throws Exception {
        assumeTrue(fences(), "the store issues no fencing tokens");
        DlockLock lock = registry.obtain(key);
        DlockLock elsewhere = other.obtain(key);
        assertThatThrownBy(lock::fencingToken).isInstanceOf(IllegalStateException.class);
        long previous = 0;
        for (DlockLock holder : new DlockLock[] {lock, elsewhere, lock, elsewhere}) {
            holder.lock();
            try {
                long token = holder.fencingToken();
                assertThat(token).as("a token after %s", previous).isGreaterThan(previous);
                previous = token;
            } finally {
                holder.unlock();
            }
        }
    }

    @Test
    void executeLockedRunsTheTaskHoldingTheLock() throws Exception {
        String answer = registry.executeLocked(key, () -> {
            assertThat(registry.obtain(key).isLeaseHeld()).isTrue();
            return other.obtain(key).tryLock() ? "another JVM got it" : "held";
        });
        assertThat(answer).isEqualTo("held");
        assertThat(lockAndUnlock(other.obtain(key))).isTrue();
    }

    @Test
    void registriesWithOtherRegistryKeysDoNotExcludeEachOther() {
        DlockLock lock = registry.obtain(key);
        lock.lock();
        try {
            DlockLock unrelated = new DlockLockRegistry(other.lockManager(), "unrelated").obtain(key);
            assertThat(unrelated.tryLock()).isTrue();
            unrelated.unlock();
        } finally {
            lock.unlock();
        }
    }

    @Test
    void conditionsAreNotSupportedAndKeysAreStrings() {
        assertThatThrownBy(() -> registry.obtain(key).newCondition()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> registry.obtain(42)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> registry.obtain(null)).isInstanceOf(IllegalArgumentException.class);
        registry.expireUnusedOlderThan(0);
    }

    /** A lock that waits for {@code other}'s holder, interrupted while waiting, throws and leaves nothing held. */
    private void assertInterruptible(LockCall call) throws Exception {
        Lock held = other.obtain(key);
        held.lock();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean interruptStatusAfter = new AtomicBoolean(true);
        AtomicBoolean heldAfter = new AtomicBoolean(true);
        Thread waiter = new Thread(() -> {
            DlockLock lock = registry.obtain(key);
            try {
                call.lock(lock);
            } catch (Throwable e) {
                thrown.set(e);
            }
            interruptStatusAfter.set(Thread.currentThread().isInterrupted());
            heldAfter.set(lock.isHeldByCurrentThread());
        }, "interrupted-waiter");
        waiter.start();
        awaitWaiting(waiter);
        waiter.interrupt();
        waiter.join(PATIENCE.toMillis());

        assertThat(waiter.isAlive()).as("the waiter still waits after the interrupt").isFalse();
        assertThat(thrown.get()).isInstanceOf(InterruptedException.class);
        assertThat(interruptStatusAfter.get()).as("interrupt status after the InterruptedException").isFalse();
        assertThat(heldAfter.get()).as("held by the interrupted waiter").isFalse();
        held.unlock();
        assertThat(onAnotherThread(() -> lockAndUnlockWithin(registry.obtain(key), PATIENCE)))
                .as("the key after the interrupted waiter gave up").isTrue();
    }

    @FunctionalInterface
    private interface LockCall {
        boolean lock(DlockLock lock) throws Exception;
    }

    /** Waits until {@code thread} is blocked (waiting for the key), at most {@link #PATIENCE}. */
    private static void awaitWaiting(Thread thread) throws InterruptedException {
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (thread.getState() != Thread.State.WAITING && thread.getState() != Thread.State.TIMED_WAITING) {
            if (System.nanoTime() - deadline > 0 || !thread.isAlive()) {
                throw new AssertionError(thread.getName() + " never waited (" + thread.getState() + ")");
            }
            Thread.sleep(5);
        }
    }

    private static boolean lockAndUnlock(Lock lock) {
        if (!lock.tryLock()) {
            return false;
        }
        lock.unlock();
        return true;
    }

    private static boolean lockAndUnlockWithin(Lock lock, Duration wait) {
        try {
            if (!lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS)) {
                return false;
            }
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
        lock.unlock();
        return true;
    }

    private static <T> T onAnotherThread(java.util.function.Supplier<T> call) throws Exception {
        try {
            return CompletableFuture.supplyAsync(call).get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }
}
