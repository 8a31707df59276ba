package dev.dlock.shedlock;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockState;
import dev.dlock.core.spi.LockBackend;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockExtender;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ShedLock's semantics as its documentation and its own provider test suite state them (a lock excludes every other
 * instance, a held name is skipped at once, {@code lockAtLeastFor} keeps the name after an early unlock,
 * {@code lockAtMostFor} frees the name of a holder that never unlocks, a second unlock fails), and what dlock adds (the
 * owner-checked unlock, a lost lease reported and never thrown into ShedLock, the fencing token through
 * {@link ShedLockContext}), and ShedLock's extensible-provider suite ({@code extend}: the lock kept past its first
 * {@code lockAtMostFor}, the old lock invalid, an expired lock not extended), run against each real store. "Another
 * instance" is a second {@link LockManager} with a
 * backend (and client) of its own; every manager waits five minutes by default, so a provider that waited for a held
 * name would hang instead of skipping it. Each test runs on a thread of its own: a lock a failed test left bound to its
 * thread cannot fail the next one.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
abstract class DlockLockProviderContract {

    /** Long enough for any store call under load: a name held this long is only freed by an unlock. */
    private static final Duration LONG = Duration.ofMinutes(1);

    private final List<LockManager> managers = new ArrayList<>();
    private final List<LockBackend> backends = new ArrayList<>();
    private final List<String> losses = new CopyOnWriteArrayList<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(DlockLockProvider.class);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();
    /** ShedLock's name of the lock under test, unique per test. */
    protected final String job = "job-" + UUID.randomUUID();

    /** A backend for one more instance of the application in the store under test; closed by the test. */
    protected abstract LockBackend newBackend();

    /** Frees what {@link #newBackend()} made. */
    protected abstract void dispose(LockBackend backend);

    @BeforeEach
    void captureLog() {
        logged.start();
        logger.addAppender(logged);
    }

    @AfterEach
    void closeManagers() {
        logger.detachAppender(logged);
        managers.forEach(manager -> manager.close(Duration.ZERO));
        backends.forEach(this::dispose);
    }

    /** One more instance of the application: its manager (default wait 5 min) and the provider over it. */
    protected DlockLockProvider instance() {
        LockBackend backend = newBackend();
        backends.add(backend);
        LockManager manager = LockManager.builder(backend).waitTime(Duration.ofMinutes(5)).listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                losses.add(lockName + " " + key);
            }
        }).build();
        managers.add(manager);
        return new DlockLockProvider(manager);
    }

    /**
     * The fencing token of the lock the current task holds, or -1 on a store that issues none (memcached): the tests
     * that compare tokens compare -1 there, and still check everything else.
     */
    private long currentToken() {
        boolean fences = backends.get(0).capabilities().fencing();
        return fences ? ShedLockContext.current().fencingToken() : -1;
    }

    protected static LockConfiguration config(String name, Duration lockAtMostFor, Duration lockAtLeastFor) {
        return new LockConfiguration(Instant.now(), name, lockAtMostFor, lockAtLeastFor);
    }

    private static SimpleLock lock(LockProvider provider, LockConfiguration config) {
        Optional<SimpleLock> lock = provider.lock(config);
        assertThat(lock).as("lock %s", config).isPresent();
        return lock.get();
    }

    /** Asks {@code provider} for {@code name} every 10 ms until it gets it; the time from {@code sinceNanos} until then. */
    private static Duration awaitLock(LockProvider provider, String name, long sinceNanos, Duration patience) throws InterruptedException {
        long deadline = System.nanoTime() + patience.toNanos();
        while (System.nanoTime() - deadline < 0) {
            Optional<SimpleLock> lock = provider.lock(config(name, LONG, Duration.ZERO));
            if (lock.isPresent()) {
                Duration took = Duration.ofNanos(System.nanoTime() - sinceNanos);
                lock.get().unlock();
                return took;
            }
            Thread.sleep(10);
        }
        throw new AssertionError("'" + name + "' was not free within " + patience);
    }

    private List<String> warnings() {
        return logged.list.stream().filter(event -> event.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage).toList();
    }

    @Test
    void aLockExcludesEveryOtherInstanceUntilUnlocked() {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        SimpleLock lock = lock(holder, config(job, LONG, Duration.ZERO));
        assertThat(other.lock(config(job, LONG, Duration.ZERO))).as("another instance while held").isEmpty();
        assertThat(other.lock(config("other-" + job, LONG, Duration.ZERO))).as("another name").isPresent().get()
                .satisfies(SimpleLock::unlock);
        lock.unlock();
        lock(other, config(job, LONG, Duration.ZERO)).unlock();
        lock(holder, config(job, LONG, Duration.ZERO)).unlock();
        assertThat(losses).isEmpty();
    }

    @Test
    @Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a provider that waited would be stopped here
    void aHeldNameIsSkippedAtOnceNeverWaitedForByAnotherInstanceAnotherThreadOrTheHoldingThread() throws Throwable {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        SimpleLock lock = lock(holder, config(job, LONG, Duration.ZERO));
        AtomicBoolean ran = new AtomicBoolean();
        assertThat(other.lock(config(job, LONG, Duration.ZERO))).as("another instance").isEmpty();
        assertThat(holder.lock(config(job, LONG, Duration.ZERO))).as("the holding thread, again").isEmpty();
        assertThat(CompletableFuture.supplyAsync(() -> holder.lock(config(job, LONG, Duration.ZERO))).get(20, TimeUnit.SECONDS))
                .as("another thread of the holding instance").isEmpty();
        LockingTaskExecutor.TaskResult<String> result = new DefaultLockingTaskExecutor(other).executeWithLock(() -> {
            ran.set(true);
            return "ran";
        }, config(job, LONG, Duration.ZERO));
        assertThat(result.wasExecuted()).as("ShedLock's executor ran the task").isFalse();
        assertThat(ran).isFalse();
        lock.unlock();
    }

    @Test
    void lockAtLeastForKeepsTheNameTakenAfterAnEarlyUnlockAndNoLonger() throws Exception {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        Duration atLeast = Duration.ofSeconds(1);
        long start = System.nanoTime();
        new DefaultLockingTaskExecutor(holder).executeWithLock((Runnable) () -> { }, config(job, LONG, atLeast));
        assertThat(other.lock(config(job, LONG, Duration.ZERO))).as("right after the task ended early").isEmpty();
        Duration freed = awaitLock(other, job, start, Duration.ofSeconds(30));
        assertThat(freed).as("when the name was free again (lockAtLeastFor %s, lockAtMostFor %s)", atLeast, LONG)
                .isGreaterThanOrEqualTo(atLeast);
        assertThat(losses).isEmpty();
        assertThat(warnings()).isEmpty();
    }

    @Test
    void anUnlockAfterLockAtLeastForFreesTheNameAtOnce() throws Exception {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        Duration atLeast = Duration.ofMillis(100);
        SimpleLock lock = lock(holder, config(job, LONG, atLeast));
        Thread.sleep(atLeast.toMillis() + 50);
        lock.unlock();
        assertThat(other.lock(config(job, LONG, Duration.ZERO))).as("after a run longer than lockAtLeastFor").isPresent()
                .get().satisfies(SimpleLock::unlock);
    }

    @Test
    void lockAtMostForFreesTheNameOfAHolderThatNeverUnlocksAndItsLateUnlockIsReportedNotThrown() throws Exception {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        Duration atMost = Duration.ofMillis(500);
        long start = System.nanoTime();
        SimpleLock stale = lock(holder, config(job, atMost, Duration.ZERO));
        // Not from the holder itself: ShedLock's own suite takes the name again from the same thread, and so may the JVM.
        Duration freed = awaitLock(other, job, start, Duration.ofSeconds(30));
        assertThat(freed).as("when the name of a holder that never unlocked was free (lockAtMostFor %s)", atMost)
                .isGreaterThanOrEqualTo(atMost.minusMillis(20));
        SimpleLock next = lock(other, config(job, LONG, Duration.ZERO));

        stale.unlock();

        assertThat(instance().lock(config(job, LONG, Duration.ZERO))).as("the next holder's lock after the stale unlock")
                .isEmpty();
        assertThat(losses).as("leases reported lost to the manager's listeners").containsExactly("shedlock shedlock:" + job);
        assertThat(warnings()).as("WARN lines").singleElement().asString().contains(job, "was lost before its unlock");
        next.unlock();
        assertThat(losses).hasSize(1);
    }

    @Test
    void aTaskThatOutlivesLockAtMostForKeepsItsResultAndItsLossIsReported() throws Throwable {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        LockingTaskExecutor.TaskResult<String> result = new DefaultLockingTaskExecutor(holder).executeWithLock(() -> {
            assertThat(ShedLockContext.current().isHeld()).isTrue();
            // Runs until another instance took the name: the lease ran out under the task.
            SimpleLock taken = null;
            while (taken == null) {
                Thread.sleep(20);
                taken = CompletableFuture.supplyAsync(() -> other.lock(config(job, LONG, Duration.ZERO))).join().orElse(null);
            }
            assertThat(ShedLockContext.current().isHeld()).as("the task's lease after it ran out").isFalse();
            assertThat(ShedLockContext.current().state()).isEqualTo(LockState.LOST);
            taken.unlock();
            return "done";
        }, config(job, Duration.ofMillis(300), Duration.ZERO));
        assertThat(result.wasExecuted()).isTrue();
        assertThat(result.getResult()).as("the task's result after a lost lease").isEqualTo("done");
        assertThat(losses).containsExactly("shedlock shedlock:" + job);
        assertThat(warnings()).singleElement().asString().contains(job);
        assertThat(ShedLockContext.find()).isEmpty();
    }

    @Test
    void aSecondUnlockFailsLoudlyAndFreesNothing() {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        SimpleLock lock = lock(holder, config(job, LONG, Duration.ZERO));
        lock.unlock();
        SimpleLock next = lock(other, config(job, LONG, Duration.ZERO));
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);
        assertThat(holder.lock(config(job, LONG, Duration.ZERO))).as("after the second unlock").isEmpty();
        next.unlock();
    }

    // ------------------------------------------------------------------ extend (ShedLock's ExtensibleLockProvider)

    /**
     * ShedLock's {@code shouldBeAbleToExtendLock} and {@code shouldBeAbleToExtendMultipleTimes}: the extended lock keeps
     * every other instance out past the first {@code lockAtMostFor}, and its unlock frees the name at once.
     */
    @Test
    void anExtendedLockKeepsOtherInstancesOutPastItsFirstLockAtMostFor() throws Exception {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        assertThat(holder).isInstanceOf(ExtensibleLockProvider.class);
        Duration atMost = Duration.ofMillis(800);
        long start = System.nanoTime();
        SimpleLock lock = lock(holder, config(job, atMost, Duration.ZERO));
        SimpleLock extended = extend(extend(extend(lock, LONG, Duration.ZERO), LONG, Duration.ZERO), LONG, Duration.ZERO);
        // Three times the first lockAtMostFor: the name would have been free twice over without the extensions.
        while (System.nanoTime() - start < atMost.multipliedBy(3).toNanos()) {
            assertThat(other.lock(config(job, LONG, Duration.ZERO))).as("another instance past the first lockAtMostFor").isEmpty();
            Thread.sleep(50);
        }
        extended.unlock();
        lock(other, config(job, LONG, Duration.ZERO)).unlock();
        assertThat(losses).isEmpty();
        assertThat(warnings()).isEmpty();
    }

    /** ShedLock's {@code lockCanNotBeExtendedTwice} and {@code lockCanNotBeUnlockedAfterExtending}: the old lock is invalid. */
    @Test
    void theOldLockIsInvalidAfterAnExtensionAndChangesNothing() {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        SimpleLock lock = lock(holder, config(job, LONG, Duration.ZERO));
        SimpleLock extended = extend(lock, LONG, Duration.ZERO);
        assertThatThrownBy(() -> lock.extend(LONG, Duration.ZERO)).as("extending the old lock again")
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(lock::unlock).as("unlocking the old lock").isInstanceOf(IllegalStateException.class);
        assertThat(other.lock(config(job, LONG, Duration.ZERO))).as("another instance after the old lock's calls").isEmpty();
        extended.unlock();
        assertThatThrownBy(extended::unlock).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> extended.extend(LONG, Duration.ZERO)).as("extending an unlocked lock")
                .isInstanceOf(IllegalStateException.class);
        lock(other, config(job, LONG, Duration.ZERO)).unlock();
    }

    /**
     * ShedLock's {@code shouldNotBeAbleToExtendExpiredLock}: a lock past its {@code lockAtMostFor} answers empty, and the
     * extension revives nothing: another instance that took the name keeps it, and a free name stays free.
     */
    @Test
    void anExpiredLockCannotBeExtendedAndItsExtensionRevivesNothing() throws Exception {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        Duration atMost = Duration.ofMillis(300);
        SimpleLock taken = lock(holder, config(job, atMost, Duration.ZERO));
        awaitLock(other, job, System.nanoTime(), Duration.ofSeconds(30));
        SimpleLock next = lock(other, config(job, LONG, Duration.ZERO));
        assertThat(taken.extend(LONG, Duration.ZERO)).as("the extension of a lock another instance took").isEmpty();
        assertThat(instance().lock(config(job, LONG, Duration.ZERO))).as("a third instance while the next holder holds it").isEmpty();
        next.unlock();

        SimpleLock expired = lock(holder, config(job, atMost, Duration.ZERO));
        awaitLock(other, job, System.nanoTime(), Duration.ofSeconds(30));
        assertThat(expired.extend(LONG, Duration.ZERO)).as("the extension of a lock that ran out").isEmpty();
        lock(other, config(job, LONG, Duration.ZERO)).unlock();
        assertThat(warnings()).as("each lost lock logged once, as at an unlock").hasSize(2)
                .allSatisfy(warning -> assertThat(warning).contains(job, "was lost"));
    }

    /** ShedLock's {@code shouldBeAbleToExtendAtLeast}: the new lockAtLeastFor, counted from the extension, keeps the name. */
    @Test
    void anExtensionsLockAtLeastForKeepsTheNameAfterAnEarlyUnlock() throws Exception {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        SimpleLock lock = lock(holder, config(job, LONG, Duration.ZERO));
        Duration atLeast = Duration.ofMillis(1_500);
        long extendedAt = System.nanoTime();
        SimpleLock extended = extend(lock, LONG, atLeast);
        extended.unlock();
        assertThat(other.lock(config(job, LONG, Duration.ZERO))).as("right after the early unlock").isEmpty();
        assertThat(awaitLock(other, job, extendedAt, Duration.ofSeconds(30))).as("when the name was free again")
                .isGreaterThanOrEqualTo(atLeast.minusMillis(5)).isLessThan(LONG);
    }

    /**
     * ShedLock's way to extend from inside a task ({@code LockExtender.extendActiveLock}): the task runs past its first
     * lockAtMostFor with the name held, reads the same fencing token, and the executor's unlock frees the name.
     */
    @Test
    void aTaskExtendsItsLockWithLockExtenderAndRunsPastItsFirstLockAtMostFor() throws Throwable {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        Duration atMost = Duration.ofMillis(800);
        LockingTaskExecutor.TaskResult<String> result = new DefaultLockingTaskExecutor(holder).executeWithLock(() -> {
            long start = System.nanoTime();
            long token = currentToken();
            LockExtender.extendActiveLock(LONG, Duration.ZERO);
            while (System.nanoTime() - start < atMost.multipliedBy(3).toNanos()) {
                assertThat(CompletableFuture.supplyAsync(() -> other.lock(config(job, LONG, Duration.ZERO))).join())
                        .as("another instance while the extended task runs").isEmpty();
                Thread.sleep(50);
            }
            assertThat(ShedLockContext.current().isHeld()).isTrue();
            assertThat(currentToken()).as("the token after the extension").isEqualTo(token);
            return "done";
        }, config(job, atMost, Duration.ZERO));
        assertThat(result.getResult()).isEqualTo("done");
        lock(other, config(job, LONG, Duration.ZERO)).unlock();
        assertThat(losses).isEmpty();
        assertThat(warnings()).isEmpty();
    }

    private static SimpleLock extend(SimpleLock lock, Duration lockAtMostFor, Duration lockAtLeastFor) {
        Optional<SimpleLock> extended = lock.extend(lockAtMostFor, lockAtLeastFor);
        assertThat(extended).as("the extension of %s", lock).isPresent();
        return extended.get();
    }

    @Test
    void nestedLocksSeeTheirOwnContextAndTheOuterOneIsBackAfterwards() throws Throwable {
        DlockLockProvider holder = instance();
        LockingTaskExecutor executor = new DefaultLockingTaskExecutor(holder);
        String inner = "inner-" + job;
        executor.executeWithLock((Runnable) () -> {
            long outerToken = currentToken();
            executor.executeWithLock((Runnable) () -> assertThat(ShedLockContext.current().name()).isEqualTo(inner),
                    config(inner, LONG, Duration.ZERO));
            assertThat(ShedLockContext.current().name()).isEqualTo(job);
            assertThat(currentToken()).isEqualTo(outerToken);
        }, config(job, LONG, Duration.ZERO));
        // A lock unlocked by another thread is not seen by the thread that took it any more.
        SimpleLock lock = lock(holder, config(job, LONG, Duration.ZERO));
        assertThat(ShedLockContext.current().name()).isEqualTo(job);
        CompletableFuture.runAsync(lock::unlock).join();
        assertThat(ShedLockContext.find()).isEmpty();
    }

    @Test
    void lockAtMostForFreesTheNameForTheHoldingThreadToo() throws Exception {
        DlockLockProvider holder = instance();
        Duration atMost = Duration.ofMillis(100);
        long start = System.nanoTime();
        SimpleLock stale = lock(holder, config(job, atMost, Duration.ZERO));
        assertThat(awaitLock(holder, job, start, Duration.ofSeconds(30))).isGreaterThanOrEqualTo(atMost.minusMillis(20));
        stale.unlock();
    }

    @Test
    void aLockAtMostForBelowDlocksShortestLeaseHoldsTheShortestLease() throws Exception {
        DlockLockProvider holder = instance();
        DlockLockProvider other = instance();
        // A try with a 30 ms lease can miss on a loaded machine (a grant that arrives after the lease could have run
        // out is not a hold): the test tries again, timing the hold from the try that took it.
        long start;
        Optional<SimpleLock> first;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        do {
            start = System.nanoTime();
            first = holder.lock(config(job, Duration.ZERO, Duration.ZERO));
        } while (first.isEmpty() && System.nanoTime() - deadline < 0);
        assertThat(first).as("the shortest lease, taken within 30 s").isPresent();
        Duration freed = awaitLock(other, job, start, Duration.ofSeconds(30));
        assertThat(freed).isGreaterThanOrEqualTo(Duration.ofMillis(25));
        Optional<SimpleLock> second;
        do {
            second = holder.lock(config(job, Duration.ofMillis(5), Duration.ZERO));
        } while (second.isEmpty() && System.nanoTime() - deadline < 0);
        assertThat(second).as("the shortest lease again, within 30 s").isPresent();
        assertThat(warnings()).as("one WARN per name").singleElement().asString().contains(job, "30 ms");
        second.get().unlock();
        first.get().unlock();
    }
}
