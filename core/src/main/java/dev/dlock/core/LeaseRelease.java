package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of a lease: a hold dropped, the key released in the store (retried while the outcome is unknown) or passed
 * to the next local waiter in one store call, {@code lockAtLeastFor} honoured by shortening the lease, and a lease
 * found lost reported to its holder. One per {@link LockManager}.
 */
final class LeaseRelease {

    private static final Logger log = LoggerFactory.getLogger(LeaseRelease.class);

    static final int RELEASE_ATTEMPTS = 10;
    static final long RELEASE_RETRY_BUDGET_NANOS = TimeUnit.SECONDS.toNanos(2);
    static final long RELEASE_RETRY_FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    static final long RELEASE_RETRY_MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    /**
     * The slowest recent hand-off call the successor spins through. Measured on 2 cores (a virtual machine, Redis on
     * loopback: a hand-off call about 100 µs, waking a sleeping thread about 25 µs): one hot key, 16 threads in one JVM
     * and 8 in each of two, hand-offs per second with the spin against without it (docs/benchmarks.md).
     */
    static final long SPIN_FOR_CALLS_UP_TO_NANOS = TimeUnit.MICROSECONDS.toNanos(250);

    private final LockManager manager;
    private final LockBackend backend;
    private final LeaseLostPolicy leaseLostPolicy;
    /** A moving average of how long a hand-off's store call took, in nanoseconds; 0 before the first. */
    private volatile long handOffCallNanos;

    LeaseRelease(LockManager manager, LeaseLostPolicy leaseLostPolicy) {
        this.manager = manager;
        this.backend = manager.backend();
        this.leaseLostPolicy = leaseLostPolicy;
    }

    /** Releases one hold of {@code lease}; {@code outermost} when it is the acquisition that took the key. */
    void release(Lease lease, boolean outermost) {
        if (outermost && manager.lockOrder != null) {
            manager.lockOrder.released(lease);
        }
        LockState before = lease.dropHold();
        if (before == null) {
            if (outermost) {
                // Holds remain (an async call still pending): they own the key now, not this thread.
                lease.ownerThread = null;
            }
            return;
        }
        if (lease.watched) {
            manager.watchdog.cancel(lease);
            if (before == LockState.HELD) {
                manager.watchedLeases.decrementAndGet();
            }
        }
        // Whether the holder's section ended inside its lease: a release that then cannot reach the store leaves
        // only the key's fate unknown, not the section's.
        boolean liveAtRelease = lease.surelyLive(System.nanoTime());
        // A watched lease whose expiry passed with no renewal confirmed is lost, as the watchdog reports it at that
        // expiry: known lost like one it reported, whichever of the two comes first (a heartbeat's release, say).
        String unconfirmed = before == LockState.HELD && lease.watched && !liveAtRelease ? lease.unconfirmedRenewalReason() : null;
        boolean knownLost = before == LockState.LOST || unconfirmed != null;
        // The turn is ours to pass on or give back unless the lease's end gave it back already (lost, or run out while
        // others waited): then the next waiter has it, and asks the store like anyone.
        boolean turnOurs = lease.giveBackTurn();
        boolean passable = turnOurs && !knownLost;
        LocalTurn.Waiter successor = passable && mayHandOff(lease) ? reserveCountedSuccessor(lease) : null;
        // The streak is over because another owner waits: the key is freed for it, and this JVM holds back a moment.
        boolean streakEnded = passable && lease.handOffStreak >= LockManager.MAX_LOCAL_HAND_OFFS;
        LocalTurn.HandOff handedOver = null;
        ReleaseResult result = null;
        LockBackendException unknownOutcome = null;
        String unknownHandOff = null;
        String lostBecause;
        boolean interruptedBefore = putInterruptAside();
        try {
            try {
                if (successor != null) {
                    String nextOwner = manager.ownerTokens.next(successor.holder);
                    // Null when the store call failed: the key is then released the usual way, and the successor asks.
                    handedOver = handOffInStore(lease, successor, nextOwner);
                    if (handedOver == LocalTurn.HandOff.NOT_HELD) {
                        result = ReleaseResult.NOT_OWNER;
                        handedOver = null;
                    } else if (handedOver != null) {
                        result = ReleaseResult.RELEASED;
                    } else {
                        unknownHandOff = nextOwner;
                    }
                }
                if (result == null && knownLost) {
                    // Known lost: its holder is told at once, and the release, in case the store still holds the key
                    // for it, goes on in the background instead of waiting for a store that may be down.
                    releaseLostInBackground(lease);
                } else if (result == null) {
                    result = releaseInStore(lease);
                }
            } catch (LockBackendException e) {
                unknownOutcome = e;
            }
            // Whatever the usual release answered: a hand-off that landed after all holds the key for the successor's
            // owner, whom nobody else will release.
            if (unknownHandOff != null && releaseUnknownHandOff(lease, unknownHandOff, successor.leaseMillis)) {
                result = ReleaseResult.RELEASED;
                unknownOutcome = null;
            }
        } finally {
            KeyGate gate = lease.gate;
            gate.holders.remove(lease);
            if (successor != null) {
                gate.turn.handOver(successor, handedOver);
                if (handedOver == null) {
                    // Nothing was passed on: the successor asks the store itself, counted on its own.
                    manager.grantSettled();
                }
            } else if (turnOurs) {
                if (streakEnded && result == ReleaseResult.RELEASED) {
                    gate.turn.holdBack(System.nanoTime() + manager.holdBackAfterStreakNanos);
                }
                gate.turn.leave();
            }
            manager.leaveGate(lease.kind, lease.key, gate);
            // A loss found now is reported before the release, the acquisition's last event: a listener that ends
            // what the acquisition started (a span) still has it open.
            lostBecause = unconfirmed != null ? unconfirmed : lostAtRelease(lease, before, result, unknownOutcome, liveAtRelease);
            if (lostBecause != null && before != LockState.LOST) {
                // Found by this release: logged here, once, as a loss is wherever it is found (LeaseLosses.reportLost).
                log.warn("dlock lease lost: {}: {}", lease, lostBecause);
                manager.listener.onLeaseLost(lease.events, lostBecause);
            } else if (before == LockState.LOST && lease.claimLossReport()) {
                // Found by a renewal or the store's session, and still on its way from the events thread.
                manager.listener.onLeaseLost(lease.events, lease.lostReason);
            }
            manager.listener.onReleased(lease.events, Duration.ofNanos(System.nanoTime() - lease.acquiredAtNanos));
            restoreInterrupt(interruptedBefore);
        }
        if (lostBecause != null) {
            LockLostException lost = new LockLostException(lease.lockName, lease.key, lostBecause);
            if (unknownOutcome != null) {
                lost.addSuppressed(unknownOutcome);
            }
            if (leaseLostPolicy == LeaseLostPolicy.THROW) {
                throw lost;
            }
            // Logged at WARN once already, when the loss was found.
            log.debug("{}", lost.getMessage());
        }
        if (unknownOutcome != null) {
            throw unknownOutcome;
        }
    }

    /**
     * Clears the calling thread's interrupt status for the store calls of a release, returning whether it was set. A
     * holder cancelled in its section ({@code Future.cancel(true)}, {@code shutdownNow}) releases with its status set,
     * and so may a thread closing the manager; some clients (ZooKeeper's, a memcached future) refuse every call of an
     * interrupted thread. An interrupt during the calls still ends the retries. Pair with {@link #restoreInterrupt}.
     */
    static boolean putInterruptAside() {
        return Thread.interrupted();
    }

    /** Sets the interrupt status again when {@link #putInterruptAside} found it set. */
    static void restoreInterrupt(boolean wasSet) {
        if (wasSet) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Why the lease turned out lost when released, or null: lost before (already reported), refused by the store, or
     * perhaps run out before a release whose outcome stayed unknown.
     */
    private static String lostAtRelease(Lease lease, LockState before, ReleaseResult result, LockBackendException unknownOutcome,
                                        boolean liveAtRelease) {
        if (before == LockState.LOST) {
            return lease.lostReason;
        }
        if (result == ReleaseResult.NOT_OWNER || result == ReleaseResult.ALREADY_FREE) {
            String forced = ForcedReleases.reason(lease.owner, null);
            // ALREADY_FREE while the lease surely lived is our own earlier attempt, whose reply was lost, unless an
            // operator's forced release of this JVM freed the key.
            if (forced != null || result == ReleaseResult.NOT_OWNER || !lease.surelyLive(System.nanoTime())) {
                return forced != null ? forced : lease.watched
                        ? "at release the key was gone or held by another owner"
                        : "the fixed lease of " + lease.leaseMillis + " ms ran out before release, or the store lost it";
            }
            return null;
        }
        if (unknownOutcome != null && !liveAtRelease) {
            // The lease may have run out before the section ended, and the store cannot say whether another took the
            // key: the holder is told its lease is lost (with the store's error), never only "outcome unknown".
            return "the " + lease.leaseMillis + " ms lease may have run out before the release, which could not "
                    + "reach the store";
        }
        return null;
    }

    /**
     * Whether a release of {@code lease} may pass the key straight to a local waiter: an exclusive lease holding
     * the turn, with no {@code lockAtLeastFor} to honour and no extension whose outcome is unknown (its release frees
     * both owners), not yet passed on {@link LockManager#MAX_LOCAL_HAND_OFFS} times in a row while another owner waits
     * for the key.
     */
    private boolean mayHandOff(Lease lease) {
        return manager.handsOffLocally() && lease.ownsTurn && lease.kind.mode() == LockKind.Mode.EXCLUSIVE && lease.keepUntilNanos == 0
                && lease.pending == null && lease.handOffStreak < LockManager.MAX_LOCAL_HAND_OFFS;
    }

    /**
     * Passes the key to {@code successor} in the store: the store value now names the successor's own owner token
     * (so a late renewal, release or token issuance of {@code lease} misses), and a new fencing token (or, from a store
     * that issues on request, one issued when the successor asks, unless it said it reads its token: then in this
     * call). A watchdog lease of the same length keeps the store's expiry and the lease's confirmed time (one command
     * fewer); otherwise the successor's lease is set. The streak counts only hand-offs made while
     * another owner waits: with nobody else asking, passing the key on keeps no one out. A failed call is repeated
     * (the hand-off is idempotent for its next owner) like a release. {@link LocalTurn.HandOff#NOT_HELD} when the lease
     * was lost; null when the outcome stayed unknown, after which the key is released the usual way and the
     * successor's owner too, in case the hand-off landed.
     */
    private LocalTurn.HandOff handOffInStore(Lease lease, LocalTurn.Waiter successor, String nextOwner) {
        boolean keepExpiry = lease.watched && successor.watched && lease.leaseMillis == successor.leaseMillis;
        long confirmedAt = lease.expiresAtNanos - TimeUnit.MILLISECONDS.toNanos(lease.leaseMillis);
        // The first send: a repeat that lands sets the expiry later, never earlier.
        long sentAt = System.nanoTime();
        long backoff = RELEASE_RETRY_FIRST_BACKOFF_NANOS;
        for (int attempt = 1; ; attempt++) {
            try {
                HandOffResult result = manager.capabilities().localHandOff().orElseThrow().handOff(lease.key, lease.owner,
                        nextOwner, keepExpiry ? 0 : successor.leaseMillis, successor.readsToken);
                if (attempt == 1) {
                    handOffCallTook(System.nanoTime() - sentAt);
                }
                if (!(result instanceof HandOffResult.Passed passed)) {
                    return LocalTurn.HandOff.NOT_HELD;
                }
                int streak = passed.othersWaiting() ? lease.handOffStreak + 1 : 0;
                return new LocalTurn.HandOff(nextOwner, passed.fencingToken(), keepExpiry ? confirmedAt : sentAt, streak);
            } catch (LockBackendException e) {
                boolean outOfTime = System.nanoTime() - sentAt + backoff > RELEASE_RETRY_BUDGET_NANOS;
                if (attempt >= RELEASE_ATTEMPTS || outOfTime || !pauseBeforeRetry(backoff)) {
                    log.debug("dlock could not hand key '{}' over to the next local holder; releasing it instead: {}",
                            lease.key, e.toString());
                    return null;
                }
                backoff = Math.min(backoff * 2, RELEASE_RETRY_MAX_BACKOFF_NANOS);
            }
        }
    }

    /**
     * The next local waiter, reserved for a hand-off that counts as a grant under way ({@code close()} waits for it)
     * until the successor records or gives back the key; null when nobody waits or the manager is closing.
     */
    private LocalTurn.Waiter reserveCountedSuccessor(Lease lease) {
        if (!manager.grantStarting()) {
            return null;
        }
        LocalTurn.Waiter successor = lease.gate.turn.reserveSuccessor(successorSpinNanos());
        if (successor == null) {
            manager.grantSettled();
        }
        return successor;
    }

    /**
     * How long the successor spins for a hand-off's answer: twice the recent hand-off call, when calls are fast enough
     * ({@link #SPIN_FOR_CALLS_UP_TO_NANOS}) that the wake-up the spin saves (tens of µs) is a real part of the call;
     * 0 before the first call and for a slower store (the successor then sleeps until woken with the answer).
     */
    long successorSpinNanos() {
        long call = handOffCallNanos;
        return call == 0 || call > SPIN_FOR_CALLS_UP_TO_NANOS ? 0 : 2 * call;
    }

    /** Adds one hand-off call's duration to the moving average (an eighth each; racing updates may drop one). */
    void handOffCallTook(long nanos) {
        long average = handOffCallNanos;
        handOffCallNanos = average == 0 ? Math.max(1, nanos) : Math.max(1, average + (nanos - average) / 8);
    }

    /**
     * Queues the release of a lease already reported lost (and of an extension's term whose outcome stayed unknown) to
     * be sent in the background, unless the manager's shutdown released it in the store already.
     */
    private void releaseLostInBackground(Lease lease) {
        if (manager.freedAtShutdown(lease)) {
            return;
        }
        manager.unknownAttempts.releaseLost(lease.kind, lease.key, lease.owner, lease.leaseMillis);
        Lease.Term unsure = lease.pending;
        if (unsure != null) {
            manager.unknownAttempts.add(lease.kind, lease.key, unsure.owner(), unsure.leaseMillis());
        }
    }

    /**
     * After a hand-off whose outcome stayed unknown and the usual release: frees the key if the hand-off landed after
     * all (the successor never learnt it got the key). True when it had landed: the holder's section then ended
     * cleanly whatever the usual release answered.
     */
    private boolean releaseUnknownHandOff(Lease lease, String nextOwner, long nextLeaseMillis) {
        try {
            return backend.release(lease.kind, lease.key, nextOwner, AcquireResult.Acquired.TOKEN_ON_REQUEST)
                    == ReleaseResult.RELEASED;
        } catch (RuntimeException e) {
            log.warn("dlock could not release key '{}' after a hand-off whose outcome is unknown; it is released again "
                    + "later, or expires with its lease", lease.key, e);
            manager.unknownAttempts.add(lease.kind, lease.key, nextOwner, Math.max(nextLeaseMillis, lease.leaseMillis));
            return false;
        }
    }

    /**
     * Releases in the store, repeating a failed call on a fresh connection for a short while: the
     * owner-checked release is safe to repeat, and a restarted store leaves pooled connections that
     * fail once each. Throws when the outcome stays unknown, so the holder is never told "done". A lease whose
     * extension's outcome stayed unknown may be held in the store by that extension's owner instead: it is freed too
     * (or, when that cannot be told, released again later).
     */
    ReleaseResult releaseInStore(Lease lease) {
        Lease.Term unsure = lease.pending;
        ReleaseResult result;
        try {
            result = releaseInStore(lease, lease.owner);
            if (unsure != null && result != ReleaseResult.RELEASED
                    && releaseInStore(lease, unsure.owner()) == ReleaseResult.RELEASED) {
                result = ReleaseResult.RELEASED;
            }
        } catch (LockBackendException e) {
            if (unsure != null) {
                manager.unknownAttempts.add(lease.kind, lease.key, unsure.owner(), unsure.leaseMillis());
            }
            throw e;
        }
        return result;
    }

    /** {@link #releaseInStore(Lease)} of the lease's term that {@code owner} holds. */
    private ReleaseResult releaseInStore(Lease lease, String owner) {
        long start = System.nanoTime();
        long backoff = RELEASE_RETRY_FIRST_BACKOFF_NANOS;
        LockBackendException first = null;
        // One per release, so that a repeated shortening is recognised as done by the store.
        String retiredOwner = lease.keepUntilNanos != 0 ? manager.ownerTokens.successor(owner) : null;
        for (int attempt = 1; ; attempt++) {
            try {
                // Rounded up: the key is kept at least until lockAtLeastFor ends, never a fraction of a millisecond less.
                long keepMillis = Math.floorDiv(lease.keepUntilNanos - System.nanoTime() + 999_999, 1_000_000);
                if (lease.keepUntilNanos != 0 && keepMillis >= 1) {
                    return keepUntilLockAtLeastFor(lease, owner, retiredOwner, keepMillis);
                }
                return backend.release(lease.kind, lease.key, owner, lease.issuedToken());
            } catch (LockBackendException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
                boolean outOfTime = System.nanoTime() - start + backoff > RELEASE_RETRY_BUDGET_NANOS;
                if (attempt >= RELEASE_ATTEMPTS || outOfTime || !pauseBeforeRetry(backoff)) {
                    throw new LockBackendException("dlock could not release " + lease + " after " + attempt
                            + " attempts; the outcome is unknown: the lease may have been lost before the release, and "
                            + "if the key is still held it expires in the store on its own (" + e.getMessage() + ")", first);
                }
                backoff = Math.min(backoff * 2, RELEASE_RETRY_MAX_BACKOFF_NANOS);
            }
        }
    }

    /**
     * A release before {@code lockAtLeastFor} ran out: the lease is shortened to what is left and given to a retired
     * owner token in one owner-checked step, so the key frees itself in the store at that moment and no command still
     * on its way for the lease's own owner (a renewal repeated by the client) can extend it again. As safe to repeat.
     */
    private ReleaseResult keepUntilLockAtLeastFor(Lease lease, String owner, String retiredOwner, long keepMillis) {
        RenewalResult kept = backend.shorten(lease.kind, lease.key, owner, retiredOwner, keepMillis);
        return kept == RenewalResult.RENEWED ? ReleaseResult.RELEASED : ReleaseResult.NOT_OWNER;
    }

    /**
     * Sleeps before another attempt of a release (or of any call repeated like one: an extension); false when interrupted
     * (the flag is kept, and no more attempts are made).
     */
    static boolean pauseBeforeRetry(long nanos) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }


    /**
     * A lease that ended for everyone but its holder (lost) gives this JVM's turn on the key to the next waiter at once,
     * instead of keeping it until its holder releases: the JVM's other threads go to the store like any other owner.
     */
    void endTurn(Lease lease) {
        if (lease.giveBackTurn()) {
            lease.gate.turn.leave();
        }
    }

    /**
     * Gives back a grant the acquisition will not keep; false when the store did not answer (logged; the caller has the
     * owner released again later, see {@link UnknownAttempts}).
     */
    boolean releaseQuietly(LockKind kind, String key, String owner, long fencingToken) {
        try {
            backend.release(kind, key, owner, fencingToken);
            return true;
        } catch (RuntimeException e) {
            log.warn("dlock could not release key '{}' after an aborted acquisition; it is released again later, or "
                    + "expires with its lease", key, e);
            return false;
        }
    }
}
