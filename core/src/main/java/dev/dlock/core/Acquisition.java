package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import dev.dlock.core.spi.StoreNode;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition of a key after its gate was entered, as non-blocking store attempts: each {@link #attempt} asks
 * the store once and says what comes next. The blocking path ({@link #block}) parks its thread between attempts;
 * {@link AsyncAcquisition} schedules the next one. So the local-turn rule (a fair lock takes no turn: it queues in
 * the store, where the order across JVMs is kept), the hand-off, the late-grant check and the waiter bookkeeping
 * exist once.
 */
final class Acquisition {

    private static final Logger log = LoggerFactory.getLogger(Acquisition.class);
    private static final long SUBSCRIBE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** What follows one attempt. */
    sealed interface Step {
    }

    /** The key is held; an exclusive lease owns this JVM's turn on the key until it is released. */
    record Taken(Lease lease) implements Step {
    }

    /** Not acquired: the wait ran out, the abort condition held, or the thread was interrupted. */
    record Refused(LockNotAcquiredException.Reason reason) implements Step {
    }

    /** Ask again after {@code nanos}, or as soon as the key's release notices reach {@code notices} in all. */
    record Wait(long nanos, long notices) implements Step {
    }

    /** Ask again at once: just subscribed to release notices, or a grant came too late to keep. */
    static final Step AGAIN = new Wait(0, 0);

    /** How a blocking acquisition ended: the handle, or why not and how long it waited. */
    record Outcome(LockHandle handle, LockNotAcquiredException.Reason failure, long waitedNanos) {
    }

    private final LockManager manager;
    private final LockRequest request;
    private final String key;
    private final long start = System.nanoTime();
    final long deadline;
    final KeyGate gate;
    /** False for a fair lock: its waiters all wait in the store, which keeps their order across JVMs. */
    final boolean takesTurn;
    private final boolean watched;
    private final long leaseMillis;
    private final WaitPacing pacing = new WaitPacing();
    /** Runs on every release notice for an acquisition that blocks no thread; null for a blocking one. */
    private final Runnable waker;
    private boolean ownsTurn;
    /** The key a releasing holder passed on with the turn, until the next attempt records it (or {@link #giveUp} frees it). */
    private LocalTurn.HandOff handedOver;
    private boolean subscribed;
    private String owner;
    /**
     * The holder name of an acquisition that blocks no thread: its store attempts run on dlock's threads, so its
     * owner token names the thread that asked for it ({@code async:<caller>}). Null for a blocking acquisition, whose
     * attempts run on the calling thread.
     */
    private final String asyncHolder;
    /** What the listeners see of this acquisition, in each of its events and its lease's. */
    private final AcquisitionContext events;

    /** Starts an acquisition of {@code key}: the listener is told, and the key's gate entered. */
    Acquisition(LockManager manager, LockRequest request, String key, Runnable waker) {
        this.manager = manager;
        this.request = request;
        this.key = key;
        this.deadline = start + manager.waitTimeOf(request).toNanos();
        this.waker = waker;
        this.asyncHolder = waker == null ? null : "async:" + OwnerTokens.holderName(Thread.currentThread());
        this.events = new AcquisitionContext(request.name(), key, request.kind());
        manager.listener.onAcquireAttempt(events);
        this.gate = manager.gates.enter(request.kind(), key);
        this.takesTurn = request.kind().mode() != LockKind.Mode.FAIR;
        this.watched = request.leaseTime() == null;
        this.leaseMillis = watched ? manager.watchdogLeaseMillis : request.leaseTime().toMillis();
    }

    /** How long this acquisition may wait for the key. */
    Duration waitTime() {
        return manager.waitTimeOf(request);
    }

    /** Runs the blocking acquisition to its end: the handle (the lock order learnt), or the refusal (the gate left). */
    Outcome run() {
        Step outcome;
        try {
            outcome = block();
        } catch (RuntimeException | Error e) {
            failed(null, e);
            throw e;
        }
        if (outcome instanceof Taken taken) {
            if (manager.lockOrder != null) {
                manager.lockOrder.acquired(taken.lease(), request.callSite());
            }
            return new Outcome(taken(taken.lease()), null, 0);
        }
        LockNotAcquiredException.Reason reason = ((Refused) outcome).reason();
        return new Outcome(null, reason, failed(reason, null).toNanos());
    }

    /** The blocking acquisition: this JVM's turn, then store attempts until one ends it, the thread parked between them. */
    Step block() {
        Step step = null;
        try {
            step = takesTurn ? enterTurn() : AGAIN;
            while (step instanceof Wait wait) {
                gate.notices.awaitNotices(wait.notices(), wait.nanos());
                step = attempt();
            }
            return step;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Refused(LockNotAcquiredException.Reason.INTERRUPTED);
        } finally {
            if (!(step instanceof Taken)) {
                giveUp();
            }
        }
    }

    /**
     * Waits for this JVM's turn, keeping its arrival place; a key the releasing holder handed over with it is recorded by
     * the next attempt. A turn granted to a waiter that left meanwhile is given back by {@link #giveUp}, with that key.
     */
    private Step enterTurn() {
        BooleanSupplier abortIf = request.abortIf();
        RuntimeException[] abortFailed = new RuntimeException[1];
        BooleanSupplier checkedAbort = abortIf == null ? null : () -> {
            try {
                return abortIf.getAsBoolean();
            } catch (RuntimeException e) {
                abortFailed[0] = e;
                return true;
            }
        };
        LocalTurn.Turn turn = gate.turn.enter(deadline, checkedAbort, request.abortCheckInterval().toNanos(), leaseMillis, watched,
                OwnerTokens.holderName(Thread.currentThread()), request.readsFencingToken());
        if (turn.owned()) {
            // Also when refused: a releasing holder reserved this waiter, and what it passed on is given back.
            turnGranted(turn.handOff());
        }
        if (abortFailed[0] != null) {
            throw abortFailed[0];
        }
        if (turn.refusal() != null) {
            // A waiter the manager's close woke fails as every acquisition still waiting at close does.
            manager.refuseIfClosed(key);
        }
        return turn.refusal() != null ? new Refused(turn.refusal()) : AGAIN;
    }

    /** This acquisition's place in the gate's queue, for one that must not block; null for a fair lock, which takes no turn. */
    LocalTurn.Waiter enterAsync(Runnable onFirstOrHolderChanged) {
        return takesTurn ? gate.turn.enterAsync(leaseMillis, watched, asyncHolder, request.readsFencingToken(), onFirstOrHolderChanged) : null;
    }

    /** The turn is ours, with the key if the releasing holder handed it over: the next attempt records it. */
    void turnGranted(LocalTurn.HandOff handOff) {
        ownsTurn = takesTurn;
        handedOver = handOff;
    }

    /** Asks the store once; never blocks, except a blocking acquisition's first wait for its release notices to flow. */
    Step attempt() throws InterruptedException {
        // A waiter woken after the manager closed asks the store for nothing: a lease taken now would be left for nobody.
        manager.refuseIfClosed(key);
        if (owner == null) {
            // Before the abort check: a store that queues waiters is told when the acquisition stops trying.
            owner = handedOver != null ? handedOver.owner()
                    : asyncHolder != null ? manager.ownerTokens.next(asyncHolder) : manager.ownerTokens.next();
        }
        BooleanSupplier abortIf = request.abortIf();
        if (abortIf != null && abortIf.getAsBoolean()) {
            return new Refused(LockNotAcquiredException.Reason.ABORTED);
        }
        if (handedOver != null) {
            return keepHandedOver();
        }
        long heldBack = takesTurn ? gate.turn.heldBackNanos(System.nanoTime()) : 0;
        if (heldBack > 0 && deadline - System.nanoTime() > heldBack) {
            // This JVM's streak on the key just ended for the owner that waits: leave the freed key to it a moment.
            return new Wait(heldBack, Long.MAX_VALUE);
        }
        long noticesSeen = gate.notices.noticeCount();
        // Counted until the grant is recorded or given back, so that close() waits for it and no grant is left behind.
        if (!manager.grantStarting()) {
            // Closed meanwhile: this throws, as every acquisition still waiting at close fails.
            manager.refuseIfClosed(key);
        }
        AcquireResult result;
        try {
            manager.losses.expectGrant(owner);
            long sentAt = System.nanoTime();
            long storeLeaseMillis = storeLeaseMillis();
            try {
                // A holder that reads its token has the store issue it in this call (no round trip of its own later).
                result = manager.backend().tryAcquire(request.kind(), key, owner, storeLeaseMillis, request.readsFencingToken());
            } catch (LockBackendException e) {
                // The command may still land after the client gave up, and take the key for nobody: its owner is
                // released again until that cannot be, first about as long after as the call took (a late command
                // lands within about the client's timeout). The acquisition ends here, so the owner is never used again.
                manager.unknownAttempts.add(request.kind(), key, owner, storeLeaseMillis, System.nanoTime() - sentAt);
                throw e;
            }
            if (result instanceof AcquireResult.Acquired acquired) {
                refuseGrantAfterClose(acquired.fencingToken());
                Step step = held(acquired.fencingToken(), sentAt, 0);
                return step == AGAIN && deadline - System.nanoTime() <= 0 ? new Refused(LockNotAcquiredException.Reason.TIMEOUT) : step;
            }
        } finally {
            manager.grantSettled();
        }
        if (Thread.currentThread().isInterrupted()) {
            // The store call saw the interrupt (a fan-out gives up and releases what it took).
            return new Refused(LockNotAcquiredException.Reason.INTERRUPTED);
        }
        long remaining = deadline - System.nanoTime();
        if (remaining <= 0) {
            return new Refused(LockNotAcquiredException.Reason.TIMEOUT);
        }
        if (!subscribed) {
            // Subscribe, then try again at once: a release between our attempt and the
            // subscription would otherwise go unnoticed until the lease ran out.
            subscribed = true;
            gate.notices.subscribe(manager.notices, key, waker, waker == null ? Math.min(remaining, SUBSCRIBE_WAIT_NANOS) : 0);
            return AGAIN;
        }
        AcquireResult.Held held = (AcquireResult.Held) result;
        long pause = pacing.nextPauseNanos(gate.notices.active(), TimeUnit.MILLISECONDS.toNanos(held.remainingTtlMillis()),
                remaining, request);
        // Fair waiters of one JVM all wait in the store at once: with w waiters ahead the turn comes after w + 1
        // releases; one fewer in case a release came between reading the count and the store's answer.
        return new Wait(pause, noticesSeen + (takesTurn ? 1 : Math.max(1, held.waitersAhead())));
    }

    /**
     * A grant that came back after the manager began to close is given back, and the acquisition fails as every
     * acquisition still waiting at close does: nobody would be left to release it once {@code close()} returned.
     */
    private void refuseGrantAfterClose(long fencingToken) {
        if (manager.isClosed()) {
            // The owner is withdrawn by giveUp(), as for any acquisition that ends without the key.
            giveBack(owner, fencingToken);
            manager.refuseIfClosed(key);
        }
    }

    /** Ends an acquisition that took the key: the listener is told, and the holder gets its handle. */
    LeaseHandle taken(Lease lease) {
        manager.listener.onAcquired(events, lease.issuedToken(), Duration.ofNanos(System.nanoTime() - start));
        return new LeaseHandle(lease, false);
    }

    /** Ends an acquisition that did not take the key (and gave up): leaves the gate, tells the listener; how long it waited. */
    Duration failed(LockNotAcquiredException.Reason reason, Throwable error) {
        manager.leaveGate(request.kind(), key, gate);
        Duration waited = Duration.ofNanos(System.nanoTime() - start);
        manager.listener.onAcquireFailed(events, error != null ? LockListener.AcquireFailure.ERROR
                : failureOf(reason), waited, error);
        return waited;
    }

    /**
     * Records the key the releasing holder passed on in the store, unless the wait ran out meanwhile (an asynchronous
     * waiter cannot leave the queue while a holder hands it the key); asks the store anew when it came too late.
     */
    private Step keepHandedOver() {
        if (deadline - System.nanoTime() <= 0) {
            return new Refused(LockNotAcquiredException.Reason.TIMEOUT);
        }
        LocalTurn.HandOff handOff = handedOver;
        handedOver = null;
        Step step;
        try {
            step = held(handOff.fencingToken(), handOff.sentAtNanos(), handOff.streak());
        } finally {
            // The releasing holder counted the hand-off as a grant under way: it is recorded or given back now.
            manager.grantSettled();
        }
        if (step == AGAIN) {
            owner = null;
        }
        return step;
    }

    /**
     * Ends an acquisition that did not take the key: a key handed over to it is released, the store is told it stopped
     * trying, and the turn is given back.
     */
    void giveUp() {
        gate.notices.stopWaking(waker);
        if (handedOver != null) {
            giveBack(handedOver.owner(), handedOver.fencingToken());
            handedOver = null;
            manager.grantSettled();
        }
        if (owner != null) {
            withdrawQuietly(owner);
        }
        if (ownsTurn) {
            ownsTurn = false;
            gate.turn.leave();
        }
    }

    /**
     * Records a grant of the store as a lease, unless it came too late ({@link #AGAIN}) or the abort condition holds. A
     * shared lease gives this JVM's turn back at once; an exclusive one keeps it until released.
     */
    private Step held(long fencingToken, long sentAt, int handOffStreak) {
        LockKind kind = request.kind();
        boolean renewed = watched && !manager.sessionKept;
        StoreNode node = renewed ? manager.renewalGrouping.map(grouping -> grouping.nodeOf(key)).orElse(StoreNode.SINGLE) : null;
        Lease lease = new Lease(manager, gate, request.name(), key, kind, owner, fencingToken, leaseMillis, watched,
                watched && manager.sessionKept, node, takesTurn && !kind.shared(), sentAt, request.lockAtLeastFor(), events);
        lease.handOffStreak = handOffStreak;
        if (!lease.surelyLive(System.nanoTime()) && !confirmLateGrant(lease)) {
            log.warn("dlock: the store granted key '{}' only after its {} ms lease could have run out (a slow reply), "
                    + "and no longer holds it for us; asking again", key, leaseMillis);
            giveBack(owner, fencingToken);
            // A released owner token is never used again: a store may tell a repeated release by its owner (Redis
            // records the releasing owner), and this owner's next lease must not pass for the one just given back.
            withdrawQuietly(owner);
            owner = null;
            return AGAIN;
        }
        BooleanSupplier abortIf = request.abortIf();
        boolean abort;
        try {
            abort = abortIf != null && abortIf.getAsBoolean();
        } catch (RuntimeException | Error e) {
            giveBack(owner, fencingToken);
            throw e;
        }
        if (abort) {
            giveBack(owner, fencingToken);
            return new Refused(LockNotAcquiredException.Reason.ABORTED);
        }
        gate.notices.stopWaking(waker);
        gate.holders.add(lease);
        if (kind.shared()) {
            if (ownsTurn) {
                ownsTurn = false;
                gate.turn.leave();
            }
        } else if (lease.hasTurn() && !watched) {
            // Only the lease's own expiry ends a fixed lease: the first waiter must know when to look.
            gate.turn.turnHolderSet();
        }
        manager.recordHeld(lease, renewed, sentAt);
        return new Taken(lease);
    }

    /**
     * Gives back a grant this acquisition will not keep; when the store cannot be reached the key stays taken for nobody,
     * so the owner is released again later, as after an attempt whose outcome is unknown.
     */
    private void giveBack(String grantedOwner, long fencingToken) {
        if (!manager.releases.releaseQuietly(request.kind(), key, grantedOwner, fencingToken)) {
            manager.unknownAttempts.add(request.kind(), key, grantedOwner, storeLeaseMillis());
        }
    }

    /**
     * A grant whose reply came after the lease could have run out may still be held in the store, whose lease runs
     * from its own grant: one owner-checked renewal tells, and restarts the lease from its send time. Keeping such a
     * grant, instead of giving it back, keeps a fair waiter's turn. False when the store no longer holds it for us.
     */
    private boolean confirmLateGrant(Lease lease) {
        long sentAt = System.nanoTime();
        try {
            List<RenewalResult> answer = manager.backend().renew(List.of(new LeaseRenewal(lease.key, lease.owner, lease.leaseMillis, lease.kind)));
            return answer.get(0) == RenewalResult.RENEWED && lease.renewed(sentAt) && lease.surelyLive(System.nanoTime());
        } catch (LockBackendException e) {
            log.debug("dlock could not confirm the late grant of key '{}': {}", lease.key, e.toString());
            return false;
        }
    }

    /** The lease the store is asked for: a session-keeping store holds watchdog leases until released. */
    private long storeLeaseMillis() {
        return watched && manager.sessionKept ? SessionLeases.UNTIL_RELEASED : leaseMillis;
    }

    /** Tells the store this acquisition stopped trying, so a store that queues waiters gives up its place at once. */
    private void withdrawQuietly(String owner) {
        manager.losses.grantWithdrawn(owner);
        try {
            manager.backend().withdraw(request.kind(), key, owner);
        } catch (RuntimeException e) {
            log.warn("dlock could not withdraw from the queue of key '{}'; the store drops the place with its session", key, e);
        }
    }

    private static LockListener.AcquireFailure failureOf(LockNotAcquiredException.Reason reason) {
        return switch (reason) {
            case TIMEOUT -> LockListener.AcquireFailure.TIMEOUT;
            case ABORTED -> LockListener.AcquireFailure.ABORTED;
            case INTERRUPTED -> LockListener.AcquireFailure.INTERRUPTED;
        };
    }
}
