package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.spi.StoreNode;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The watchdog on the in-memory store: renewal cadence and batching, released leases left alone,
 * leases the store let go or gave to another owner reported lost, and renewal calls that hang, fail or
 * die with an Error. A renewal that hangs is a real call held on a latch, its store underneath real.
 */
class WatchdogTest extends EngineTestSupport {

    /** Records the renewal outcomes and lost leases a manager reports. */
    private static final class Events implements LockListener {
        final List<String> renewed = new CopyOnWriteArrayList<>();
        final List<String> renewalErrors = new CopyOnWriteArrayList<>();
        final List<String> lostReasons = new CopyOnWriteArrayList<>();
        final AtomicLong lostAtNanos = new AtomicLong();

        @Override
        public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
            if (outcome == RenewalOutcome.RENEWED) {
                renewed.add(key);
            } else if (outcome == RenewalOutcome.ERROR) {
                renewalErrors.add(key);
            }
        }

        @Override
        public void onLeaseLost(String lockName, String key, String reason) {
            lostAtNanos.compareAndSet(0, System.nanoTime());
            lostReasons.add(reason);
        }
    }

    // ------------------------------------------------------------------ renewing

    @Test
    void aLeaseIsRenewedEveryThirdOfItAndStaysHeld() {
        long leaseMillis = 900;
        RecordingBackend backend = tapped();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(leaseMillis)));
        LockManager other = manager();
        long before = System.nanoTime();
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            while (backend.sentRenewalsOf(key).size() < 4) {
                assertThat(lock.isHeld()).as("held between renewals").isTrue();
                sleepBriefly();
                assertThat(System.nanoTime() - before).as("four renewals within four thirds of the lease and a margin")
                        .isLessThan(TimeUnit.SECONDS.toNanos(10));
            }
            assertThat(other.tryAcquire(key)).as("held in the store while renewed").isEmpty();
            assertThat(lock.isHeld()).isTrue();
        }
        List<Long> sentAt = new ArrayList<>();
        sentAt.add(before);
        backend.sentRenewalsOf(key).forEach(r -> sentAt.add(r.sentAtNanos()));
        long third = TimeUnit.MILLISECONDS.toNanos(leaseMillis) / 3;
        // A slot may fire up to one slot (10 ms) before a lease's due time; one more slot for scheduling noise.
        long earliest = third - TimeUnit.MILLISECONDS.toNanos(3 * Watchdog.SLOT_MILLIS);
        for (int i = 1; i < sentAt.size(); i++) {
            assertThat(sentAt.get(i) - sentAt.get(i - 1)).as("ns between renewal %d and the write before it", i)
                    .isGreaterThanOrEqualTo(earliest)
                    .isLessThan(TimeUnit.MILLISECONDS.toNanos(leaseMillis));
        }
        assertThat(backend.sentRenewalsOf(key)).allSatisfy(r -> assertThat(r.renewal().leaseMillis()).isEqualTo(leaseMillis));
    }

    @Test
    void manyLeasesAreRenewedInBatchesOfTheConfiguredSize() {
        RecordingBackend backend = tapped();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(600)).renewalBatchSize(10));
        List<LockHandle> handles = new ArrayList<>();
        try {
            for (int i = 0; i < 50; i++) {
                handles.add(locks.acquire(key + ":" + i, Duration.ZERO));
            }
            await("every lease renewed once", Duration.ofSeconds(10),
                    () -> handles.stream().allMatch(h -> !backend.sentRenewalsOf(h.key()).isEmpty()));
            int callsForTheFirstRound = indexOfFirstBatchThatRenewedEveryone(backend, handles) + 1;
            assertThat(backend.batchSizes).allSatisfy(size -> assertThat(size).isBetween(1, 10));
            assertThat(callsForTheFirstRound).as("store calls to renew 50 leases once").isLessThanOrEqualTo(10);
        } finally {
            handles.forEach(LockHandle::close);
        }
    }

    private static int indexOfFirstBatchThatRenewedEveryone(RecordingBackend backend, List<LockHandle> handles) {
        List<String> pending = new ArrayList<>(handles.stream().map(LockHandle::key).toList());
        int entry = 0;
        List<Integer> sizes = backend.batchSizes;
        for (int call = 0; call < sizes.size(); call++) {
            for (int i = 0; i < sizes.get(call); i++) {
                pending.remove(backend.renewals.get(entry++).key());
            }
            if (pending.isEmpty()) {
                return call;
            }
        }
        throw new AssertionError("not every lease was renewed: " + pending);
    }

    @Test
    void aReleasedLeaseIsNeverRenewedAgain() {
        RecordingBackend backend = tapped();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(300)));
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            await("a first renewal", Duration.ofSeconds(5), () -> !backend.sentRenewalsOf(key).isEmpty());
        }
        int renewalsAtRelease = backend.sentRenewalsOf(key).size();
        String witness = key + ":witness";
        try (LockHandle other = locks.acquire(witness, Duration.ZERO)) {
            // Three renewals of another lease prove the watchdog went round several times since.
            await("three renewals of the witness", Duration.ofSeconds(10), () -> backend.sentRenewalsOf(witness).size() >= 3);
        }
        assertThat(backend.sentRenewalsOf(key)).hasSize(renewalsAtRelease);
    }

    @Test
    void aReleaseThatLandsWhileTheWatchdogHoldsTheLeaseWins() throws Exception {
        RecordingBackend backend = tapped();
        Events events = new Events();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(300)).listener(events));
        CountDownLatch renewalInHand = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(1);
        AtomicBoolean first = new AtomicBoolean(true);
        backend.beforeRenew(batch -> {
            if (batch.stream().anyMatch(r -> r.key().equals(key)) && first.compareAndSet(true, false)) {
                renewalInHand.countDown();
                awaitQuietly(released);
            }
        });
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        assertThat(renewalInHand.await(10, TimeUnit.SECONDS)).isTrue();
        lock.close();
        released.countDown();
        String witness = key + ":witness";
        try (LockHandle other = locks.acquire(witness, Duration.ZERO)) {
            await("three renewals of the witness", Duration.ofSeconds(10), () -> backend.sentRenewalsOf(witness).size() >= 3);
        }
        assertThat(backend.sentRenewalsOf(key)).as("only the renewal that was in hand").hasSize(1);
        assertThat(events.lostReasons).as("a released lease is not reported lost").isEmpty();
        assertThat(events.renewed).as("the late answer for a released lease is no renewal").doesNotContain(key);
        assertFree(manager(), key, "the key is free");
    }

    // ------------------------------------------------------------------ leases the store let go

    @Test
    void aLeaseThatRanOutInTheStoreIsReportedLostToItsHolder() {
        Events events = new Events();
        LockManager locks = manager(store, b -> b.leaseTime(Duration.ofMillis(300)).listener(events));
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        skipStoreTime(Duration.ofSeconds(1));
        await("the loss reported", Duration.ofSeconds(5), () -> !events.lostReasons.isEmpty());
        assertThat(events.lostReasons).singleElement().asString().contains("expired or was deleted");
        assertThat(lock.isHeld()).isFalse();
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        assertThat(locks.admin().watchedLeaseCount()).isZero();
        assertThatThrownBy(() -> locks.acquire(key, Duration.ZERO)).as("a lost lease is not re-entered")
                .isInstanceOf(LockLostException.class);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class).hasMessageContaining("expired or was deleted");
        assertThat(locks.admin().heldLocks()).isEmpty();
        assertThat(events.lostReasons).as("reported once").hasSize(1);
    }

    /**
     * A listener that blocks when told of a lost lease (an alert sent synchronously, a handle closed from it) holds up no
     * renewal: the other leases of the same store stay held, and the loss reaches the listener all the same.
     */
    @Test
    void aListenerBlockedOnALostLeaseHoldsUpNoRenewalOfTheOthers() {
        CountDownLatch listenerEntered = new CountDownLatch(1);
        CountDownLatch listenerMayReturn = new CountDownLatch(1);
        List<String> lost = new CopyOnWriteArrayList<>();
        LockListener blocking = new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                lost.add(key);
                listenerEntered.countDown();
                awaitQuietly(listenerMayReturn);
            }
        };
        Duration lease = Duration.ofMillis(600);
        LockManager locks = manager(store, b -> b.leaseTime(lease).listener(blocking));
        LockManager other = manager();
        String kept = key + ":kept";
        try {
            LockHandle dropped = locks.acquire(key, Duration.ZERO);
            try (LockHandle held = locks.acquire(kept, Duration.ZERO)) {
                assertThat(other.admin().forceRelease(key)).as("an operator frees the first key").hasSize(1);
                awaitQuietly(listenerEntered);
                assertThat(lost).containsExactly(key);
                long end = System.nanoTime() + lease.multipliedBy(4).toNanos();
                while (System.nanoTime() < end) {
                    assertThat(held.isHeld()).as("renewed while the listener blocks").isTrue();
                    assertThat(other.tryAcquire(kept)).as("held in the store while the listener blocks").isEmpty();
                    sleepBriefly();
                }
                listenerMayReturn.countDown();
                assertThat(held.isHeld()).isTrue();
            }
            assertThatThrownBy(dropped::close).isInstanceOf(LockLostException.class);
        } finally {
            listenerMayReturn.countDown();
        }
        assertThat(lost).as("losses told").containsExactly(key);
        assertFree(other, kept, "the kept key is free after its release");
    }

    /**
     * A listener may close its manager when told of a loss (an application shutting down on a lost lock): the close,
     * run on the events thread, frees what is held and does not wait for the events thread, its own.
     */
    @Test
    void aListenerThatClosesItsManagerOnALostLeaseClosesItWithoutWaitingForItself() {
        Logger logger = (Logger) LoggerFactory.getLogger(BackgroundEvents.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        AtomicReference<LockManager> self = new AtomicReference<>();
        // Counted down after each close() the listener makes returns: the outer one (told of the first loss) last.
        CountDownLatch closed = new CountDownLatch(2);
        LockManager locks = manager(store, b -> b.leaseTime(Duration.ofMillis(600)).shutdownGracePeriod(Duration.ZERO).listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                // Also told, on the closing thread, of the lease the close frees: that second close returns at once.
                self.get().close();
                closed.countDown();
            }
        }));
        self.set(locks);
        LockManager other = manager();
        String kept = key + ":kept";
        try {
            LockHandle dropped = locks.acquire(key, Duration.ZERO);
            LockHandle held = locks.acquire(kept, Duration.ZERO);
            assertThat(other.admin().forceRelease(key)).as("an operator frees the first key").hasSize(1);
            awaitQuietly(closed);
            assertThat(held.state()).as("the other lease, freed by the close").isEqualTo(LockState.LOST);
            assertFree(other, kept, "freed by the close");
            assertThatThrownBy(dropped::close).isInstanceOf(LockLostException.class);
        } finally {
            logger.detachAppender(logged);
        }
        assertThat(logged.list).as("the close waited for the thread it ran on").noneMatch(e -> e.getFormattedMessage().contains("still busy"));
    }

    /**
     * The loss of a lease comes before its release, the acquisition's last event, even while the events thread is
     * still busy and the loss waits there: the release tells it, and the events thread then does not tell it again.
     */
    @Test
    void aLossStillOnItsWayToTheListenersIsToldBeforeTheReleaseAndOnce() {
        CountDownLatch blockedOnFirst = new CountDownLatch(1);
        CountDownLatch firstMayReturn = new CountDownLatch(1);
        String first = key + ":first";
        List<String> events = new CopyOnWriteArrayList<>();
        LockManager locks = manager(store, b -> b.leaseTime(Duration.ofMillis(600)).listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                events.add("lost " + lostKey);
                if (lostKey.equals(first)) {
                    blockedOnFirst.countDown();
                    awaitQuietly(firstMayReturn);
                }
            }

            @Override
            public void onReleased(String lockName, String releasedKey, Duration held) {
                events.add("released " + releasedKey);
            }
        }));
        LockManager operator = manager();
        try {
            LockHandle blocking = locks.acquire(first, Duration.ZERO);
            LockHandle lock = locks.acquire(key, Duration.ZERO);
            assertThat(operator.admin().forceRelease(first)).hasSize(1);
            awaitQuietly(blockedOnFirst);
            assertThat(operator.admin().forceRelease(key)).hasSize(1);
            await("the watchdog to find the second lease lost", Duration.ofSeconds(10), () -> lock.state() == LockState.LOST);
            assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
            assertThat(events).as("the second lease's events, its loss still queued behind the first's")
                    .filteredOn(event -> event.endsWith(" " + key)).containsExactly("lost " + key, "released " + key);
            firstMayReturn.countDown();
            assertThatThrownBy(blocking::close).isInstanceOf(LockLostException.class);
        } finally {
            firstMayReturn.countDown();
        }
        locks.close();
        assertThat(events).as("every event, the queue drained by the close")
                .containsExactly("lost " + first, "lost " + key, "released " + key, "released " + first);
    }

    /**
     * A listener on the events thread may close the manager while another thread closes it: its close returns at once
     * instead of waiting for the other, which waits for the events thread.
     */
    @Test
    void aListenerClosingTheManagerWhileAnotherThreadClosesItDoesNotHoldUpEitherClose() throws Exception {
        Logger logger = (Logger) LoggerFactory.getLogger(BackgroundEvents.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        String kept = key + ":kept";
        CountDownLatch lossBeingTold = new CountDownLatch(1);
        CountDownLatch closingStarted = new CountDownLatch(1);
        CountDownLatch listenerClosed = new CountDownLatch(1);
        AtomicReference<LockManager> self = new AtomicReference<>();
        LockManager locks = manager(store, b -> b.leaseTime(Duration.ofMillis(600)).shutdownGracePeriod(Duration.ZERO)
                .listener(new LockListener() {
                    @Override
                    public void onLeaseLost(String lockName, String lostKey, String reason) {
                        if (lostKey.equals(kept)) {
                            // Told by the closing thread's sweep: the close is under way.
                            closingStarted.countDown();
                            return;
                        }
                        lossBeingTold.countDown();
                        awaitQuietly(closingStarted);
                        self.get().close();
                        listenerClosed.countDown();
                    }
                }));
        self.set(locks);
        LockManager operator = manager();
        try {
            locks.acquire(key, Duration.ZERO);
            locks.acquire(kept, Duration.ZERO);
            Thread closing = new Thread(locks::close, "closing");
            assertThat(operator.admin().forceRelease(key)).hasSize(1);
            awaitQuietly(lossBeingTold);
            // The events thread now waits in the listener until the close below has started.
            closing.start();
            closing.join(30_000);
            assertThat(closing.isAlive()).as("the close returned").isFalse();
            awaitQuietly(listenerClosed);
        } finally {
            closingStarted.countDown();
            logger.detachAppender(logged);
        }
        assertThat(logged.list).as("a close waited for the events thread").noneMatch(e -> e.getFormattedMessage().contains("still busy"));
    }

    @Test
    void aLeaseAnotherOwnerTookIsReportedLostAndItsReleaseFreesNothing() {
        Events events = new Events();
        LockManager locks = manager(store, b -> b.leaseTime(Duration.ofMillis(300)).listener(events));
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        skipStoreTime(Duration.ofSeconds(1));
        try (LockHandle taken = manager().acquire(key, Duration.ZERO)) {
            assertThat(taken.fencingToken()).isGreaterThan(lock.fencingToken());
            await("the loss reported", Duration.ofSeconds(5), () -> !events.lostReasons.isEmpty());
            assertThat(events.lostReasons).singleElement().asString().contains("held by another owner");
            assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class).hasMessageContaining(key);
            assertThat(taken.isHeld()).isTrue();
            assertThat(manager().tryAcquire(key)).as("the loser's release freed nothing").isEmpty();
        }
    }

    @Test
    void underTheLogPolicyALostLeaseClosesWithoutThrowing() {
        Events events = new Events();
        LockManager locks = manager(store, b -> b.leaseTime(Duration.ofMillis(300))
                .leaseLostPolicy(LeaseLostPolicy.LOG).listener(events));
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        store.close();
        await("the loss reported", Duration.ofSeconds(5), () -> !events.lostReasons.isEmpty());
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        lock.close();
        assertThat(lock.state()).isEqualTo(LockState.RELEASED);
    }

    // ------------------------------------------------------------------ renewal calls that hang, fail or die

    /**
     * A renewal call that hangs past the lease's expiry: the holder stops being told "held" and is told
     * the lease is lost at the expiry, while the call still hangs; its late answer revives nothing.
     */
    @Test
    void aLeaseWhoseRenewalIsNotAnsweredByItsExpiryIsReportedLost() throws Exception {
        long leaseMillis = 300;
        RecordingBackend backend = tapped();
        Events events = new Events();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(leaseMillis)).listener(events));
        CountDownLatch renewalHangs = new CountDownLatch(1);
        CountDownLatch answer = new CountDownLatch(1);
        AtomicBoolean callReturned = new AtomicBoolean();
        backend.beforeRenew(batch -> {
            if (renewalHangs.getCount() > 0) {
                renewalHangs.countDown();
                awaitQuietly(answer);
                callReturned.set(true);
            }
        });
        long before = System.nanoTime();
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        try {
            assertThat(renewalHangs.await(10, TimeUnit.SECONDS)).as("a renewal call hangs").isTrue();
            await("the loss reported", Duration.ofSeconds(5), () -> !events.lostReasons.isEmpty());
            assertThat(callReturned).as("reported while the call still hangs").isFalse();
            assertThat(events.lostAtNanos.get() - before).as("not before the lease could have run out")
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(leaseMillis));
            assertThat(events.lostReasons).singleElement().asString().contains("no renewal was confirmed");
            assertThat(lock.isHeld()).isFalse();
            assertThat(lock.state()).isEqualTo(LockState.LOST);
            await("the hanging call reported as stalled", Duration.ofSeconds(5), () -> locks.admin().watchdogStalledCalls() == 1);
        } finally {
            answer.countDown();
        }
        await("the stall to clear", Duration.ofSeconds(5), () -> locks.admin().watchdogStalledCalls() == 0);
        assertThat(locks.admin().watchdogStallCount()).isGreaterThanOrEqualTo(1);
        int renewalsAfterTheAnswer = backend.sentRenewalsOf(key).size();
        String witness = key + ":witness";
        try (LockHandle other = locks.acquire(witness, Duration.ZERO)) {
            await("three renewals of the witness", Duration.ofSeconds(10), () -> backend.sentRenewalsOf(witness).size() >= 3);
        }
        assertThat(backend.sentRenewalsOf(key)).as("a lost lease is never renewed again").hasSize(renewalsAfterTheAnswer);
        assertThat(events.renewed).as("the late answer counts as no renewal").doesNotContain(key);
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
    }

    /** Keys on a node whose renewal call hangs are lost; keys on another node keep being renewed meanwhile. */
    @Test
    void aHangingNodeDelaysOnlyItsOwnLeases() throws Exception {
        RecordingBackend backend = tapped();
        String stalledKey = key + ":stalled-node";
        String healthyKey = key + ":healthy-node";
        backend.renewalGroups(k -> new StoreNode(k.endsWith(":stalled-node") ? "stalled" : "healthy"));
        Events events = new Events();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(300)).listener(events));
        CountDownLatch answer = new CountDownLatch(1);
        backend.beforeRenew(batch -> {
            if (batch.stream().anyMatch(r -> r.key().equals(stalledKey))) {
                awaitQuietly(answer);
            }
        });
        try (LockHandle healthy = locks.acquire(healthyKey, Duration.ZERO)) {
            LockHandle stalled = locks.acquire(stalledKey, Duration.ZERO);
            try {
                await("the stalled node's lease lost", Duration.ofSeconds(5), () -> stalled.state() == LockState.LOST);
                int renewedBefore = backend.sentRenewalsOf(healthyKey).size();
                await("three more renewals on the healthy node", Duration.ofSeconds(5),
                        () -> backend.sentRenewalsOf(healthyKey).size() >= renewedBefore + 3);
                assertThat(healthy.isHeld()).isTrue();
                assertThat(events.lostReasons).as("only the stalled node's lease").hasSize(1);
            } finally {
                answer.countDown();
            }
            assertThatThrownBy(stalled::close).isInstanceOf(LockLostException.class);
        }
    }

    /** A store unreachable for a moment: the failed renewals are retried before the lease runs out, and it stays held. */
    @Test
    void renewalsThatFailForAMomentAreRetriedInTime() {
        RecordingBackend backend = tapped();
        AtomicInteger failuresLeft = new AtomicInteger(4);
        backend.beforeRenew(batch -> {
            if (failuresLeft.getAndDecrement() > 0) {
                throw new LockBackendException("injected: connection reset", null);
            }
        });
        Events events = new Events();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(600)).listener(events));
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            await("renewals after the failures", Duration.ofSeconds(10), () -> events.renewed.size() >= 2);
            assertThat(events.renewalErrors).as("failed rounds reported").isNotEmpty();
            assertThat(events.lostReasons).isEmpty();
            assertThat(lock.isHeld()).isTrue();
            assertThat(manager().tryAcquire(key)).as("held in the store").isEmpty();
        }
        assertThat(locks.admin().watchdogErrorCount()).isGreaterThanOrEqualTo(1);
    }

    /** A store unreachable for good: the renewals are retried until the lease has surely run out, then it is lost. */
    @Test
    void renewalsThatKeepFailingEndInALostLease() {
        long leaseMillis = 300;
        RecordingBackend backend = tapped();
        AtomicInteger attempts = new AtomicInteger();
        backend.beforeRenew(batch -> {
            attempts.incrementAndGet();
            throw new LockBackendException("injected: connection refused", null);
        });
        Events events = new Events();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(leaseMillis)).listener(events));
        long before = System.nanoTime();
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        await("the loss reported", Duration.ofSeconds(5), () -> !events.lostReasons.isEmpty());
        assertThat(events.lostAtNanos.get() - before).as("not before the lease could have run out")
                .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(leaseMillis));
        assertThat(events.renewalErrors).as("each failed attempt reported").isNotEmpty();
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        assertThat(attempts.get()).as("renewal calls tried").isGreaterThan(2);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
    }

    /** A renewal call that dies with an Error must not leave its lease without renewals. */
    @Test
    void aRenewalCallDyingWithAnErrorLeavesItsLeaseRenewed() {
        RecordingBackend backend = tapped();
        AtomicInteger errorsLeft = new AtomicInteger(2);
        backend.beforeRenew(batch -> {
            if (errorsLeft.getAndDecrement() > 0) {
                throw new StackOverflowError("injected: a renewal call dies with an Error");
            }
        });
        Events events = new Events();
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(600)).listener(events));
        try (LockHandle handle = locks.acquire(key, Duration.ZERO)) {
            await("renewals after the injected Errors", Duration.ofSeconds(10), () -> events.renewed.size() >= 3);
            assertThat(events.lostReasons).as("leases reported lost").isEmpty();
            assertThat(handle.isHeld()).isTrue();
            assertThat(manager().tryAcquire(key)).as("another manager got the key").isEmpty();
        }
        assertThat(locks.admin().watchdogErrorCount()).isGreaterThanOrEqualTo(2);
    }

    private static void sleepBriefly() {
        try {
            Thread.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
