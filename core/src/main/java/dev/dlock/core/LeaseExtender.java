package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.RenewalResult;
import java.time.Duration;
import java.util.Objects;

/**
 * A held fixed lease given a new term by its holder ({@link LockHandle#extend}): one owner-checked store call that sets
 * the lease and, in the same step, gives it a fresh owner token (the store's {@link LeaseExtension}). So no
 * command still on its way for the earlier term — a late renewal, a retried acquisition, a shortening, a release or a
 * token issuance — can change the new term, and the extension, should it land late, finds the key free or another's and
 * changes nothing. The holder's estimate follows the new term from the extension's first send.
 *
 * <p>An extension whose outcome stays unknown after its repeats is kept as the lease's {@link Lease#pending} term: the
 * lease is counted until the earlier of its two possible ends, its release frees both owners, and the next extension
 * or token issuance first sends it again (the same owner and lease: a no-op when it had landed). A watchdog-managed
 * lease, or one the store keeps by its session, is held for as long as its holder holds it: nothing is sent.
 */
final class LeaseExtender {

    private LeaseExtender() {
    }

    /**
     * Extends {@code lease} to {@code leaseTime} from now. With {@code newMinimum}, {@code lockAtLeastFor} (null for
     * none) replaces the lease's minimum, counted from now; otherwise the minimum stays as it was.
     *
     * @throws IllegalStateException when the lease was released
     * @throws LockLostException when the lease was lost or ran out, or the store no longer holds it (reported as a loss)
     * @throws LockBackendException when the store could not be told: the outcome is unknown
     * @throws UnsupportedOperationException when the store offers no {@link LeaseExtension}; nothing was sent
     */
    static void extend(Lease lease, Duration leaseTime, Duration lockAtLeastFor, boolean newMinimum) {
        long leaseMillis = LockRequest.validLeaseTime(Objects.requireNonNull(leaseTime, "leaseTime")).toMillis();
        LockRequest.validLockAtLeastFor(lockAtLeastFor, leaseTime);
        LockManager manager = lease.manager;
        if (newMinimum && lockAtLeastFor != null && !manager.keepsLockAtLeastFor) {
            throw new IllegalArgumentException("lockAtLeastFor needs a store whose leases expire on their own; "
                    + manager.backend().getClass().getSimpleName() + " keeps leases alive by its session and cannot time "
                    + "a shortened one (key '" + lease.key + "')");
        }
        lease.tokenLock.lock();
        try {
            requireLive(lease);
            if (lease.watched || lease.keptBySession) {
                // Kept for as long as it is held already: by the watchdog's renewals, or by the store's session.
                lease.keepUntilNanos = keepUntil(lease, lockAtLeastFor, newMinimum, System.nanoTime());
                return;
            }
            extension(lease);
            settle(lease);
            long sentAt = System.nanoTime();
            Lease.Term term = new Lease.Term(manager.ownerTokens.successor(lease.owner), leaseMillis, sentAt,
                    keepUntil(lease, lockAtLeastFor, newMinimum, sentAt));
            lease.pending = term;
            send(lease, term);
        } finally {
            lease.tokenLock.unlock();
        }
    }

    /** The {@code lockAtLeastFor} deadline after an extension at {@code nowNanos}: the lease's own, or a new one (0: none). */
    private static long keepUntil(Lease lease, Duration lockAtLeastFor, boolean newMinimum, long nowNanos) {
        if (!newMinimum) {
            return lease.keepUntilNanos;
        }
        return lockAtLeastFor == null ? 0 : nowNanos + lockAtLeastFor.toNanos();
    }

    /**
     * Sends the lease's {@link Lease#pending} term again, if any, and records the answer; the caller holds the lease's
     * {@link Lease#tokenLock}. A term whose outcome is unknown stays pending and the failure is thrown.
     */
    static void settle(Lease lease) {
        Lease.Term unsure = lease.pending;
        if (unsure != null) {
            send(lease, unsure);
        }
    }

    /** The store's extension, or the refusal of a store that offers none (nothing is sent then). */
    private static LeaseExtension extension(Lease lease) {
        return lease.manager.capabilities().leaseExtension().orElseThrow(() -> new UnsupportedOperationException(
                lease + ": the store " + lease.manager.backend().getClass().getSimpleName() + " cannot extend a lease "
                        + "with a new term (it offers no LeaseExtension); take a long enough lease, or a watchdog-managed one"));
    }

    /**
     * Throws unless {@code lease} is held and surely live. A fixed lease that ran out is reported lost here, and nothing
     * is sent for it: its holder was already told it may have lost the key, and its turn went to the JVM's next waiter.
     */
    private static void requireLive(Lease lease) {
        LockState state = lease.recordedState();
        if (state == LockState.RELEASED) {
            throw new IllegalStateException(lease + " was released; only a held lock can be extended");
        }
        if (state == LockState.HELD && !lease.surelyLive(System.nanoTime())) {
            if (lease.watched) {
                // The watchdog reports it when its renewal stays unanswered; until then it is in doubt, not lost.
                throw new LockLostException(lease.lockName, lease.key, "not extended: no renewal of the "
                        + lease.leaseMillis + " ms lease was confirmed in time, so the store may have let the key go");
            }
            lease.manager.losses.leaseLost(lease, "the fixed lease of " + lease.leaseMillis + " ms had run out when an extension was asked for", false);
        }
        if (lease.recordedState() == LockState.LOST) {
            throw new LockLostException(lease.lockName, lease.key, lease.lostReason);
        }
    }

    /** Sends {@code term} (repeated while the outcome is unknown) and records the store's answer. */
    private static void send(Lease lease, Lease.Term term) {
        RenewalResult result;
        try {
            result = repeated(lease, term);
        } catch (LockBackendException e) {
            lease.termUnsure(term);
            termEndChanged(lease);
            if (lease.recordedState() != LockState.HELD) {
                // Lost meanwhile (the manager's shutdown): its release may have missed the new term's owner.
                lease.manager.unknownAttempts.add(lease.kind, lease.key, term.owner(), term.leaseMillis());
            }
            throw new LockBackendException("dlock could not extend " + lease + "; the outcome is unknown: the lease counts "
                    + "until the earlier of its two possible ends, and the next extension, fencing token or release "
                    + "settles it (" + e.getMessage() + ")", e);
        }
        if (result == RenewalResult.RENEWED) {
            if (lease.newTerm(term)) {
                termEndChanged(lease);
                return;
            }
            // Lost meanwhile (the manager's shutdown, an operator's forced release): the new term is nobody's.
            lease.pending = null;
            try {
                lease.manager.backend().release(lease.kind, lease.key, term.owner(), AcquireResult.Acquired.TOKEN_ON_REQUEST);
            } catch (RuntimeException e) {
                lease.manager.unknownAttempts.add(lease.kind, lease.key, term.owner(), term.leaseMillis());
            }
        } else {
            lease.pending = null;
            lease.manager.losses.leaseLost(lease, result == RenewalResult.TAKEN
                    ? "the key was held by another owner when the lease was extended"
                    : "the key had expired or was deleted in the store when the lease was extended", false);
        }
        throw new LockLostException(lease.lockName, lease.key, lease.lostReason);
    }

    /**
     * The lease's end moved (a shorter term, or one in doubt): this JVM's first waiter for the key, asleep until the old
     * end, looks again, so that the local turn ends with the new term as it does in the store.
     */
    private static void termEndChanged(Lease lease) {
        if (lease.hasTurn()) {
            lease.gate.turn.turnHolderSet();
        }
    }

    /**
     * The store's answer to {@code term}, repeating a failed call for a short while as a release does: the same owner
     * and lease, so a repeat of a call that landed changes nothing. Throws when the outcome stays unknown, also at once
     * when the thread is interrupted between attempts (the flag is kept).
     */
    private static RenewalResult repeated(Lease lease, Lease.Term term) {
        long start = System.nanoTime();
        long backoff = LeaseRelease.RELEASE_RETRY_FIRST_BACKOFF_NANOS;
        LockBackendException first = null;
        for (int attempt = 1; ; attempt++) {
            try {
                return extension(lease).extend(lease.kind, lease.key, lease.owner, term.owner(), term.leaseMillis());
            } catch (LockBackendException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
                boolean outOfTime = System.nanoTime() - start + backoff > LeaseRelease.RELEASE_RETRY_BUDGET_NANOS;
                if (attempt >= LeaseRelease.RELEASE_ATTEMPTS || outOfTime || !LeaseRelease.pauseBeforeRetry(backoff)) {
                    throw first;
                }
                backoff = Math.min(backoff * 2, LeaseRelease.RELEASE_RETRY_MAX_BACKOFF_NANOS);
            }
        }
    }
}
