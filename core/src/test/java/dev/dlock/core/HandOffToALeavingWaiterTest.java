package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.spi.LockBackend;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

/**
 * A releasing holder reserves the first local waiter and passes it the key in one store call. A waiter that leaves
 * meanwhile (interrupted, or its abort condition turned true) must still settle the reservation: whatever was
 * handed over is given back in the store, and the turn goes on to the next local waiter. Before, the key stayed
 * taken in the store by no handle and the JVM's other waiters never got their turn. An asynchronous waiter is
 * reserved the same way; it leaves by cancellation or its wait time.
 */
class HandOffToALeavingWaiterTest extends EngineTestSupport {

    private final CountDownLatch handOffStarted = new CountDownLatch(1);
    private final CountDownLatch handOffMayProceed = new CountDownLatch(1);
    /** For the asynchronous successor's cases: the releasing holder's thread, the waiter behind, the holder's token. */
    private Thread releasing;
    private CompletableFuture<Object> secondWaiter;
    private long holderToken;

    /** A store whose hand-off waits, once it has reserved the successor, until the test lets it go on. */
    private RecordingBackend slowHandOffs() {
        return slowHandOffs(false);
    }

    /** As {@link #slowHandOffs()}; {@code failing}: the hand-off then fails as a store that cannot be reached does. */
    private RecordingBackend slowHandOffs(boolean failing) {
        RecordingBackend backend = new RecordingBackend(store);
        backend.aroundHandOff(call -> {
            handOffStarted.countDown();
            awaitQuietly(handOffMayProceed);
            if (failing) {
                throw new LockBackendException("the store is unreachable (test)", null);
            }
            return call.get();
        });
        return backend;
    }

    @Test
    void aSuccessorInterruptedDuringTheHandOffGivesTheKeyBackAndTheNextWaiterGetsIt() throws Exception {
        LockManager locks = manager(slowHandOffs(), b -> { });
        LockHandle holder = locks.acquire(key, Duration.ofSeconds(5));
        CompletableFuture<Object> first = new CompletableFuture<>();
        Thread firstWaiter = start("first-waiter", () -> lockOnce(locks, LockRequest.builder(key)
                .waitTime(Duration.ofSeconds(30)).build(), first));
        await("the first waiter to queue", Duration.ofSeconds(10), () -> threadsWaitingForTheTurn() == 1);
        CompletableFuture<Object> second = new CompletableFuture<>();
        start("second-waiter", () -> lockOnce(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(10)).build(), second));
        await("the second waiter to queue", Duration.ofSeconds(10), () -> threadsWaitingForTheTurn() == 2);

        Thread releasing = start("releasing-holder", holder::close);
        assertThat(handOffStarted.await(10, TimeUnit.SECONDS)).as("the release started a hand-off").isTrue();
        firstWaiter.interrupt();
        await("the interrupted waiter to leave, or to wait for the hand-over", Duration.ofSeconds(10),
                () -> first.isDone() || isInGate(firstWaiter, "awaitHandOver"));
        handOffMayProceed.countDown();
        releasing.join(10_000);

        assertThat(first.get(10, TimeUnit.SECONDS)).as("the interrupted waiter's outcome")
                .isEqualTo(LockNotAcquiredException.Reason.INTERRUPTED);
        assertThat(second.get(20, TimeUnit.SECONDS)).as("the next local waiter gets the key").isInstanceOf(Long.class);
        assertFree(manager(), key, "nothing is left held in the store");
    }

    @Test
    void aSuccessorWhoseAbortConditionTurnsTrueWhileReservedGivesTheKeyBackAndTheNextWaiterGetsIt() throws Exception {
        LockManager locks = manager(slowHandOffs(), b -> { });
        LockHandle holder = locks.acquire(key, Duration.ofSeconds(5));
        AtomicBoolean abortArmed = new AtomicBoolean();
        CountDownLatch checkingAbort = new CountDownLatch(1);
        // Once armed, the check answers "abort" only after the releasing holder reserved this waiter.
        BooleanSupplier abortIf = () -> {
            if (!abortArmed.get()) {
                return false;
            }
            checkingAbort.countDown();
            awaitQuietly(handOffStarted);
            return true;
        };
        CompletableFuture<Object> first = new CompletableFuture<>();
        Thread firstWaiter = start("first-waiter", () -> lockOnce(locks, LockRequest.builder(key)
                .waitTime(Duration.ofSeconds(30)).abortIf(abortIf).abortCheckInterval(Duration.ofMillis(10)).build(), first));
        await("the first waiter to queue", Duration.ofSeconds(10), () -> threadsWaitingForTheTurn() == 1);
        CompletableFuture<Object> second = new CompletableFuture<>();
        start("second-waiter", () -> lockOnce(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(10)).build(), second));
        await("the second waiter to queue", Duration.ofSeconds(10), () -> threadsWaitingForTheTurn() == 2);

        abortArmed.set(true);
        assertThat(checkingAbort.await(10, TimeUnit.SECONDS)).as("the first waiter checks its abort condition").isTrue();
        Thread releasing = start("releasing-holder", holder::close);
        assertThat(handOffStarted.await(10, TimeUnit.SECONDS)).as("the release started a hand-off").isTrue();
        await("the aborting waiter to leave, or to wait for the hand-over", Duration.ofSeconds(10),
                () -> first.isDone() || isInGate(firstWaiter, "awaitHandOver"));
        handOffMayProceed.countDown();
        releasing.join(10_000);

        assertThat(first.get(10, TimeUnit.SECONDS)).as("the aborting waiter's outcome")
                .isEqualTo(LockNotAcquiredException.Reason.ABORTED);
        assertThat(second.get(20, TimeUnit.SECONDS)).as("the next local waiter gets the key").isInstanceOf(Long.class);
        assertFree(manager(), key, "nothing is left held in the store");
    }

    @Test
    void aSuccessorWhoseWaitRunsOutWhileReservedGivesTheKeyBackAndTheNextWaiterGetsIt() throws Exception {
        assertLeavingSuccessorSettles(slowHandOffs(), false, LockNotAcquiredException.Reason.TIMEOUT);
    }

    @Test
    void aSuccessorThatAbortsWhileTheHandOffFailsInTheStoreLeavesTheTurnToTheNextWaiter() throws Exception {
        assertLeavingSuccessorSettles(slowHandOffs(true), true, LockNotAcquiredException.Reason.ABORTED);
    }

    @Test
    void anAsynchronousSuccessorCancelledDuringTheHandOffGivesTheKeyBackAndTheNextWaiterGetsIt() throws Exception {
        CompletableFuture<LockHandle> first = asyncSuccessorReservedDuringTheHandOff(slowHandOffs(), Duration.ofSeconds(30));
        first.cancel(false);
        handOffMayProceed.countDown();
        releasing.join(10_000);

        assertThat(secondWaiter.get(20, TimeUnit.SECONDS)).as("the next local waiter gets the key").isInstanceOf(Long.class);
        assertThat(first).as("the cancelled acquisition").isCancelled();
        assertFree(manager(), key, "nothing is left held in the store");
    }

    @Test
    void anAsynchronousSuccessorWhoseWaitRunsOutWhileReservedGivesTheKeyBackAndTheNextWaiterGetsIt() throws Exception {
        Duration waitTime = Duration.ofMillis(300);
        CompletableFuture<LockHandle> first = asyncSuccessorReservedDuringTheHandOff(slowHandOffs(), waitTime);
        // Counted from after the acquisition started, so that its own deadline has surely passed.
        long reservedAt = System.nanoTime();
        await("the asynchronous waiter's wait time to run out", Duration.ofSeconds(10),
                () -> System.nanoTime() - reservedAt > waitTime.toNanos());
        handOffMayProceed.countDown();
        releasing.join(10_000);

        assertThat(reasonOf(first)).as("the asynchronous waiter's outcome").isEqualTo(LockNotAcquiredException.Reason.TIMEOUT);
        assertThat(secondWaiter.get(20, TimeUnit.SECONDS)).as("the next local waiter gets the key").isInstanceOf(Long.class);
        assertFree(manager(), key, "nothing is left held in the store");
    }

    @Test
    void anAsynchronousSuccessorWhoseHandOffFailsInTheStoreTakesTheKeyTheUsualWay() throws Exception {
        CompletableFuture<LockHandle> first = asyncSuccessorReservedDuringTheHandOff(slowHandOffs(true), Duration.ofSeconds(30));
        handOffMayProceed.countDown();
        releasing.join(10_000);

        LockHandle taken = first.get(10, TimeUnit.SECONDS);
        assertThat(taken.isHeld()).as("the asynchronous successor holds the key after the failed hand-off").isTrue();
        assertThat(secondWaiter).as("the next local waiter while the successor holds the key").isNotDone();
        taken.close();
        assertThat(secondWaiter.get(20, TimeUnit.SECONDS)).as("the next local waiter gets the key").isInstanceOf(Long.class);
        assertFree(manager(), key, "nothing is left held in the store");
    }

    @Test
    void anAsynchronousSuccessorTakesTheKeyHandedOverWithAFreshFencingToken() throws Exception {
        RecordingBackend backend = slowHandOffs();
        CompletableFuture<LockHandle> first = asyncSuccessorReservedDuringTheHandOff(backend, Duration.ofSeconds(30));
        handOffMayProceed.countDown();
        releasing.join(10_000);

        LockHandle taken = first.get(10, TimeUnit.SECONDS);
        assertThat(taken.fencingToken()).as("a fresh token for the successor").isGreaterThan(holderToken);
        assertThat(backend.passes).as("the key passed in one store call, not released and taken again").containsExactly("handOff");
        taken.close();
        assertThat(secondWaiter.get(20, TimeUnit.SECONDS)).as("the next local waiter gets the key").isInstanceOf(Long.class);
    }

    /**
     * An asynchronous acquisition first in the local queue and a blocking one behind it; the holder's release on another
     * thread has reserved the asynchronous one and waits in its hand-off store call until the test lets it go on.
     */
    private CompletableFuture<LockHandle> asyncSuccessorReservedDuringTheHandOff(RecordingBackend backend, Duration waitTime)
            throws InterruptedException {
        LockManager locks = manager(backend, b -> { });
        LockHandle holder = locks.acquire(key, Duration.ofSeconds(5));
        holderToken = holder.fencingToken();
        holder.detachFromThread();
        CompletableFuture<LockHandle> first = locks.acquireAsync(LockRequest.builder(key).waitTime(waitTime).build());
        secondWaiter = new CompletableFuture<>();
        start("second-waiter", () -> lockOnce(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(15)).build(), secondWaiter));
        await("the blocking waiter to queue behind the asynchronous one", Duration.ofSeconds(10), () -> threadsWaitingForTheTurn() == 1);
        backend.passes.clear();
        releasing = start("releasing-holder", () -> {
            try {
                holder.close();
            } catch (LockBackendException expectedWhenTheStoreFails) {
                // Not expected: a failed hand-off falls back to a plain release, which reaches the store.
            }
        });
        assertThat(handOffStarted.await(10, TimeUnit.SECONDS)).as("the release started a hand-off to the asynchronous waiter").isTrue();
        return first;
    }

    private static LockNotAcquiredException.Reason reasonOf(CompletableFuture<LockHandle> acquisition) throws Exception {
        try {
            acquisition.get(10, TimeUnit.SECONDS).close();
            return null;
        } catch (java.util.concurrent.ExecutionException e) {
            return ((LockNotAcquiredException) e.getCause()).reason();
        }
    }

    /**
     * The first waiter checks its abort condition (the gate's lock released) while the holder's release reserves it;
     * the condition then answers {@code abort}, after the waiter's wait time has run out. Whatever the hand-off did,
     * the waiter leaves with {@code expected}, the next local waiter gets the key, and nothing stays held.
     */
    private void assertLeavingSuccessorSettles(RecordingBackend backend, boolean abort, LockNotAcquiredException.Reason expected)
            throws Exception {
        LockManager locks = manager(backend, b -> { });
        LockHandle holder = locks.acquire(key, Duration.ofSeconds(5));
        AtomicBoolean armed = new AtomicBoolean();
        CountDownLatch checking = new CountDownLatch(1);
        // The first check runs after the acquisition started: its wait time is surely over 2 s after that check.
        AtomicLong firstCheckAt = new AtomicLong();
        BooleanSupplier abortIf = () -> {
            firstCheckAt.compareAndSet(0, System.nanoTime());
            if (!armed.get()) {
                return false;
            }
            checking.countDown();
            awaitQuietly(handOffStarted);
            // For the timeout case: answer only once the wait time is over, so the next check is the deadline's.
            await("the first waiter's wait time to run out", Duration.ofSeconds(10),
                    () -> System.nanoTime() - firstCheckAt.get() > Duration.ofSeconds(2).toNanos());
            return abort;
        };
        CompletableFuture<Object> first = new CompletableFuture<>();
        Thread firstWaiter = start("first-waiter", () -> lockOnce(locks, LockRequest.builder(key)
                .waitTime(Duration.ofSeconds(2)).abortIf(abortIf).abortCheckInterval(Duration.ofMillis(10)).build(), first));
        await("the first waiter to queue", Duration.ofSeconds(10), () -> threadsWaitingForTheTurn() == 1);
        CompletableFuture<Object> second = new CompletableFuture<>();
        start("second-waiter", () -> lockOnce(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(15)).build(), second));
        await("the second waiter to queue", Duration.ofSeconds(10), () -> threadsWaitingForTheTurn() == 2);

        armed.set(true);
        assertThat(checking.await(10, TimeUnit.SECONDS)).as("the first waiter checks its abort condition").isTrue();
        Thread releasing = start("releasing-holder", () -> {
            try {
                holder.close();
            } catch (LockBackendException expectedWhenTheStoreFails) {
                // The release could not reach the store either: its outcome is unknown, and the key expires on its own.
            }
        });
        assertThat(handOffStarted.await(10, TimeUnit.SECONDS)).as("the release started a hand-off").isTrue();
        await("the first waiter to leave, or to wait for the hand-over", Duration.ofSeconds(10),
                () -> first.isDone() || isInGate(firstWaiter, "awaitHandOver"));
        handOffMayProceed.countDown();
        releasing.join(10_000);

        assertThat(first.get(10, TimeUnit.SECONDS)).as("the first waiter's outcome").isEqualTo(expected);
        assertThat(second.get(20, TimeUnit.SECONDS)).as("the next local waiter gets the key").isInstanceOf(Long.class);
        assertFree(manager(), key, "nothing is left held in the store");
    }

    /** Takes and releases the lock once; completes, once released, with the fencing token or the reason it was not acquired. */
    @Test
    void aWaiterCheckingItsAbortConditionWhileTheKeyIsHandedToItTakesItAtOnce() throws Exception {
        assertAReleaseDuringTheAbortCheckIsNotMissed(true);
    }

    @Test
    void aWaiterCheckingItsAbortConditionWhileTheKeyIsReleasedTakesItAtOnce() throws Exception {
        assertAReleaseDuringTheAbortCheckIsNotMissed(false);
    }

    /**
     * The abort condition runs with the gate unlocked: a release (or a hand-off) meanwhile signals a waiter that is not
     * asleep yet. Before, the waiter then slept a whole check interval (here 60 s) with the key free for it.
     */
    private void assertAReleaseDuringTheAbortCheckIsNotMissed(boolean handOffs) throws Exception {
        LockBackend backend = handOffs ? new RecordingBackend(store) : tapped();
        LockManager locks = manager(backend, b -> b.localHandOff(handOffs));
        LockHandle holder = locks.acquire(key, Duration.ofSeconds(30));
        CountDownLatch checking = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(1);
        AtomicBoolean blockedOnce = new AtomicBoolean();
        BooleanSupplier abortIf = () -> {
            if (isInGate(Thread.currentThread(), "enter") && blockedOnce.compareAndSet(false, true)) {
                checking.countDown();
                awaitQuietly(released);
            }
            return false;
        };
        CompletableFuture<Object> waiter = new CompletableFuture<>();
        start("waiter", () -> lockOnce(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(120)).abortIf(abortIf)
                .abortCheckInterval(Duration.ofSeconds(60)).build(), waiter));
        assertThat(checking.await(10, TimeUnit.SECONDS)).as("the waiter checks its abort condition in the gate").isTrue();
        holder.close();
        released.countDown();

        assertThat(waiter.get(20, TimeUnit.SECONDS)).as("the waiter takes the key well before its next check (60 s)")
                .isInstanceOf(Long.class);
        assertFree(manager(), key, "nothing is left held in the store");
    }

    private static void lockOnce(LockManager locks, LockRequest request, CompletableFuture<Object> outcome) {
        try {
            long token;
            try (LockHandle lock = locks.acquire(request)) {
                token = lock.fencingToken();
            }
            outcome.complete(token);
        } catch (LockNotAcquiredException e) {
            outcome.complete(e.reason());
        } catch (RuntimeException | Error e) {
            outcome.completeExceptionally(e);
        }
    }
}
