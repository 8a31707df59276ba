package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.testkit.RecordingBackend;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Closing a manager frees what it holds: holds still running get a grace period to end by themselves, then every lease
 * still held is released in the store (another instance takes the key at once, not after the lease) and reported lost
 * to its holder, whose own release then sends nothing; nothing new is taken meanwhile.
 */
class ManagerShutdownTest extends EngineTestSupport {

    private final List<String> lostReasons = new CopyOnWriteArrayList<>();

    private final LockListener recordsLosses = new LockListener() {
        @Override
        public void onLeaseLost(String lockName, String lostKey, String reason) {
            lostReasons.add(lostKey + ": " + reason);
        }
    };

    @Test
    void aLeaseStillHeldAfterTheGracePeriodIsFreedInTheStoreAndReportedLostToItsHolder() throws Exception {
        RecordingBackend tapped = tapped();
        LockManager locks = manager(tapped, b -> b.shutdownGracePeriod(Duration.ofMillis(100)).listener(recordsLosses));
        LockHandle held = heldByAnotherThread(locks, LockRequest.builder(key).waitTime(Duration.ZERO).build());

        locks.close();

        assertFree(manager(), key, "another manager on the same store takes the key right after close(), not after the 30 s lease");
        assertThat(held.state()).as("the holder's view").isEqualTo(LockState.LOST);
        assertThat(held.isHeld()).isFalse();
        assertThat(lostReasons).as("onLeaseLost").singleElement().asString().startsWith(key + ": ")
                .contains("lock manager was closed").contains("100 ms");
        int sentBefore = commandsSent(tapped);
        assertThat(tapped.releases.get()).as("releases sent by the shutdown").isEqualTo(1);

        assertThatThrownBy(held::close).as("the holder's release, THROW policy").isInstanceOf(LockLostException.class)
                .hasMessageContaining(key).hasMessageContaining("lock manager was closed");
        assertThat(commandsSent(tapped)).as("store commands sent by the holder's own release").isEqualTo(sentBefore);
        assertThat(lostReasons).as("the loss is reported once").hasSize(1);
        assertThat(locks.admin().heldLocks()).isEmpty();
    }

    @Test
    void aHoldThatEndsWithinTheGracePeriodIsReleasedNormallyAndCloseReturnsRightAfterIt() throws Exception {
        RecordingBackend tapped = tapped();
        LockManager locks = manager(tapped, b -> b.leaseTime(Duration.ofMillis(300)).shutdownGracePeriod(Duration.ofSeconds(60))
                .listener(recordsLosses));
        LockHandle held = heldByAnotherThread(locks, LockRequest.builder(key).waitTime(Duration.ZERO).build());

        Thread closing = start("closing", locks::close);
        long renewals = tapped.renewalsOf(key);
        await("a renewal of the 300 ms lease while close() waits (the watchdog runs through the grace period)",
                Duration.ofSeconds(10), () -> tapped.renewalsOf(key) > renewals);
        assertThat(closing.isAlive()).as("close() still waits for the hold").isTrue();
        assertThat(manager().tryAcquire(key)).as("the key, held by a section still running").isEmpty();
        assertThatThrownBy(() -> locks.tryAcquire(key + ":new")).as("a new acquisition while the manager closes")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining(key + ":new");

        held.close();
        closing.join(10_000);

        assertThat(closing.isAlive()).as("close() returned soon after the last hold ended, well inside its 60 s grace")
                .isFalse();
        assertThat(held.state()).isEqualTo(LockState.RELEASED);
        assertThat(lostReasons).as("a hold that ended by itself is not reported lost").isEmpty();
        assertThat(tapped.releases.get()).as("releases sent: the holder's own").isEqualTo(1);
        assertFree(manager(), key, "the key after the hold ended");
    }

    @Test
    void waitersQueuedAtCloseFailAndNeverTakeTheKey() throws Exception {
        LockManager locks = manager(store, b -> b.shutdownGracePeriod(Duration.ofSeconds(60)));
        LockHandle held = heldByAnotherThread(locks, LockRequest.builder(key).waitTime(Duration.ZERO).build());
        CompletableFuture<Object> waited = queuedWaiter(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build());
        CompletableFuture<LockHandle> asyncWaiter = locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build());

        Thread closing = start("closing", locks::close);

        assertThatThrownBy(() -> asyncWaiter.get(10, TimeUnit.SECONDS)).as("the asynchronous waiter, during the grace period")
                .cause().isInstanceOf(IllegalStateException.class).hasMessageContaining(key);
        held.close();
        assertThat(waited.get(10, TimeUnit.SECONDS)).as("what the blocking waiter got once the hold ended")
                .isInstanceOf(IllegalStateException.class);
        assertThat((Throwable) waited.get()).hasMessageContaining(key).hasMessageContaining("closed");
        closing.join(10_000);
        assertThat(closing.isAlive()).isFalse();
        assertFree(manager(), key, "nothing is left held after close");
    }

    @Test
    void aLeaseWithLockAtLeastForIsShortenedAtCloseNotDeleted() throws Exception {
        LockManager locks = manager(store, b -> b.shutdownGracePeriod(Duration.ZERO));
        LockHandle job = heldByAnotherThread(locks, LockRequest.builder(key).waitTime(Duration.ZERO)
                .lockAtLeastFor(Duration.ofSeconds(20)).build());

        locks.close();

        assertThat(job.state()).isEqualTo(LockState.LOST);
        LockManager otherNode = manager();
        assertThat(otherNode.tryAcquire(key)).as("another node within lockAtLeastFor").isEmpty();
        skipStoreTime(Duration.ofSeconds(21));
        assertFree(otherNode, key, "another node once lockAtLeastFor (20 s) passed, before the 30 s lease would have");
    }

    @Test
    void theClosingThreadsOwnHoldIsFreedWithoutWaitingForIt() {
        LockManager locks = manager(store, b -> b.shutdownGracePeriod(Duration.ofSeconds(60)));
        LockHandle mine = locks.acquire(key, Duration.ZERO);
        long start = System.nanoTime();

        locks.close();

        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("close() from the holding thread, 60 s grace")
                .isLessThan(Duration.ofSeconds(10));
        assertFree(manager(), key, "the closing thread's own key after close()");
        assertThatThrownBy(mine::close).isInstanceOf(LockLostException.class).hasMessageContaining(key);
    }

    @Test
    void aReadLeaseStillHeldAtCloseIsFreedToo() throws Exception {
        LockManager locks = manager(store, b -> b.shutdownGracePeriod(Duration.ZERO));
        LockHandle reader = heldByAnotherThread(locks, LockRequest.builder(key).kind(LockKind.READ).waitTime(Duration.ZERO).build());

        locks.close();

        assertThat(reader.state()).isEqualTo(LockState.LOST);
        assertThat(manager().tryAcquire(LockRequest.builder(key).kind(LockKind.WRITE).waitTime(Duration.ZERO).build()))
                .as("another manager's write lock right after close()").isPresent().get().satisfies(LockHandle::close);
    }

    @Test
    void aReleaseThatFailsAtCloseIsLoggedNotThrownAndTheHolderIsStillTold() throws Exception {
        RecordingBackend tapped = tapped();
        tapped.aroundRelease(call -> {
            throw new LockBackendException("the store is gone", null);
        });
        LockManager locks = manager(tapped, b -> b.shutdownGracePeriod(Duration.ZERO).listener(recordsLosses));
        LockHandle held = heldByAnotherThread(locks, LockRequest.builder(key).waitTime(Duration.ZERO).build());

        assertThatCode(locks::close).as("close() with a store that refuses the release").doesNotThrowAnyException();

        assertThat(held.state()).isEqualTo(LockState.LOST);
        assertThat(lostReasons).hasSize(1);
        int sentBefore = commandsSent(tapped);
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);
        assertThat(commandsSent(tapped)).as("store commands sent by the holder's own release").isEqualTo(sentBefore);
    }

    @Test
    void closeIsIdempotentAndLaterCallsReturnAtOnce() throws Exception {
        LockManager locks = manager(store, b -> b.shutdownGracePeriod(Duration.ZERO).listener(recordsLosses));
        heldByAnotherThread(locks, LockRequest.builder(key).waitTime(Duration.ZERO).build());
        locks.close();
        locks.close(Duration.ofSeconds(60));
        locks.close();
        assertThat(lostReasons).hasSize(1);
    }

    @Test
    void aNegativeGracePeriodIsRefused() {
        assertThatThrownBy(() -> LockManager.builder(store).shutdownGracePeriod(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("grace period");
        assertThat(LockManager.builder(store).build()).satisfies(locks -> {
            assertThat(locks.shutdownGracePeriod()).isEqualTo(LockManager.DEFAULT_SHUTDOWN_GRACE_PERIOD);
            locks.close();
        });
    }

    @Test
    void aBlockingWaiterQueuedForTheTurnFailsAsSoonAsCloseBeginsNotAtTheEndOfTheGracePeriod() throws Exception {
        LockManager locks = manager(store, b -> b.shutdownGracePeriod(Duration.ofSeconds(60)));
        LockHandle held = heldByAnotherThread(locks, LockRequest.builder(key).waitTime(Duration.ZERO).build());
        CompletableFuture<Object> waited = queuedWaiter(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build());

        Thread closing = start("closing", locks::close);

        assertThat(waited.get(10, TimeUnit.SECONDS)).as("what the queued thread got while close() still waits for the hold")
                .isInstanceOf(IllegalStateException.class);
        assertThat((Throwable) waited.get()).hasMessageContaining(key).hasMessageContaining("closed");
        assertThat(closing.isAlive()).as("close() is still in its 60 s grace period, waiting for the hold").isTrue();
        held.close();
        closing.join(10_000);
        assertThat(closing.isAlive()).isFalse();
        assertFree(manager(), key, "nothing is left held after close");
    }

    @Test
    void closeWaitsForAnAcquisitionWhoseStoreCallIsUnderWayAndItsGrantIsGivenBack() throws Exception {
        RecordingBackend tapped = tapped();
        CountDownLatch inCall = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        AtomicLong callEndedAt = new AtomicLong();
        tapped.aroundAcquire(call -> {
            if (inCall.getCount() == 0) {
                return call.get();
            }
            inCall.countDown();
            awaitQuietly(proceed);
            AcquireResult answer = call.get();
            callEndedAt.set(System.nanoTime());
            return answer;
        });
        LockManager locks = manager(tapped, b -> b.shutdownGracePeriod(Duration.ZERO));
        CompletableFuture<Object> acquired = new CompletableFuture<>();
        start("acquiring", () -> {
            try {
                acquired.complete(locks.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).build()));
            } catch (RuntimeException e) {
                acquired.complete(e);
            }
        });
        assertThat(inCall.await(10, TimeUnit.SECONDS)).as("the acquisition's store call started").isTrue();

        AtomicLong closeReturnedAt = new AtomicLong();
        Thread closing = start("closing", () -> {
            locks.close();
            closeReturnedAt.set(System.nanoTime());
        });
        await("close() to return or to wait", Duration.ofSeconds(10),
                () -> !closing.isAlive() || closing.getState() == Thread.State.TIMED_WAITING && isIn(closing, ManagerShutdown.class, "run"));
        assertThat(closing.isAlive()).as("close() waits while an acquisition's store call is under way").isTrue();
        proceed.countDown();
        closing.join(10_000);

        assertThat(acquired.get(10, TimeUnit.SECONDS)).as("what the acquisition got: its grant came back during close()")
                .isInstanceOf(IllegalStateException.class);
        assertThat((Throwable) acquired.get()).hasMessageContaining(key).hasMessageContaining("closed");
        assertThat(closeReturnedAt.get() - callEndedAt.get()).as("close() returned after the store call ended").isPositive();
        assertFree(manager(), key, "the key granted during close() was given back before close() returned");
    }

    @Test
    void closeReleasesAgainAnOwnerThatAFailedAcquisitionLeftInTheStore() {
        RecordingBackend tapped = tapped();
        AtomicReference<Supplier<AcquireResult>> lateCommand = failFirstAcquisitionAtTheClient(tapped);
        LockManager locks = manager(tapped, b -> { });
        assertThatThrownBy(() -> locks.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).build()))
                .isInstanceOf(LockBackendException.class);
        assertThat(lateCommand.get().get()).as("the command lands after the client gave up")
                .isInstanceOf(AcquireResult.Acquired.class);

        locks.close();

        assertFree(manager(), key, "the key the late command took, right after close(), not after its 30 s lease");
    }

    /** Takes {@code request} on a thread that then ends, leaving the lease held by nobody the closing thread knows. */
    private LockHandle heldByAnotherThread(LockManager locks, LockRequest request) throws Exception {
        CompletableFuture<LockHandle> taken = new CompletableFuture<>();
        start("holder", () -> {
            try {
                taken.complete(locks.acquire(request));
            } catch (RuntimeException e) {
                taken.completeExceptionally(e);
            }
        }).join(10_000);
        return taken.get(10, TimeUnit.SECONDS);
    }

    private static int commandsSent(RecordingBackend tapped) {
        return tapped.acquires.get() + tapped.releases.get() + tapped.handOffs.get() + tapped.issuances.get()
                + tapped.withdrawals.size() + tapped.renewals.size();
    }
}
