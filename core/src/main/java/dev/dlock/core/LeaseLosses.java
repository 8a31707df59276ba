package dev.dlock.core;

import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a lease's loss reaches its holder, once, whoever finds it (a renewal, the store's session, a token issuance, an
 * operator's forced release, the manager's shutdown): the lease is marked lost, its turn on the key goes to the JVM's
 * next waiter, and the log and the listeners are told. On a store that keeps leases by its session, the store may
 * report a grant lost before the acquiring thread recorded it as a lease: that report is kept and applied once the
 * grant is recorded, never dropped. One per {@link LockManager}.
 */
final class LeaseLosses {

    private static final Logger log = LoggerFactory.getLogger(LeaseLosses.class);
    private static final String NO_LOSS = "";

    private final LockManager manager;
    private final boolean sessionKept;
    /**
     * On a session-keeping store, the owners whose acquisition is under way, with the loss the store reported for
     * one of them before its grant was recorded as a lease ({@link #NO_LOSS} while none).
     */
    private final ConcurrentHashMap<String, String> acquiringOwners = new ConcurrentHashMap<>();

    LeaseLosses(LockManager manager, boolean sessionKept) {
        this.manager = manager;
        this.sessionKept = sessionKept;
    }

    /** Called by the watchdog (or the store's session) when the store says a held lease is gone. */
    void leaseLost(Lease lease, String reason) {
        leaseLost(lease, reason, true);
    }

    /**
     * Marks a held lease lost and tells the listeners, once; {@code byRenewal} when a renewal (or the store's session)
     * found it, which also counts as a lost renewal, rather than a fencing token's issuance.
     */
    void leaseLost(Lease lease, String reason, boolean byRenewal) {
        if (!lease.markLost(ForcedReleases.reason(lease.owner, reason))) {
            return;
        }
        if (lease.watched) {
            manager.watchedLeases.decrementAndGet();
        }
        reportLost(lease, byRenewal);
    }

    /**
     * Gives the lost lease's turn to the JVM's next waiter, and tells the log and the listeners that it is lost: from
     * the events thread when a renewal or the store's session found it (a listener that blocks must not hold up the
     * watchdog), from this thread otherwise (the holder's own call, a forced release, the shutdown).
     */
    void reportLost(Lease lease, boolean byRenewal) {
        reportLost(lease, byRenewal, byRenewal);
    }

    /** {@link #reportLost(Lease, boolean)}, from the events thread when {@code offThread} (a store's thread found it). */
    private void reportLost(Lease lease, boolean byRenewal, boolean offThread) {
        lease.stops.leaseLost();
        manager.releases.endTurn(lease);
        log.warn("dlock lease lost: {}: {}", lease, lease.lostReason);
        LockListener listener = manager.listener;
        String reason = lease.lostReason;
        if (offThread) {
            manager.backgroundEvents.tell(() -> {
                if (byRenewal) {
                    listener.onRenewal(lease.lockName, lease.key, LockListener.RenewalOutcome.LOST);
                }
                // The holder's release may have told it already, so as to tell it before onReleased.
                if (lease.claimLossReport()) {
                    listener.onLeaseLost(lease.events, reason);
                }
            });
        } else if (lease.claimLossReport()) {
            listener.onLeaseLost(lease.events, reason);
        }
    }

    /**
     * Marks {@code owner} as acquiring, before each store attempt, on a session-keeping store: a loss the store reports
     * before the grant is recorded is kept for {@link #grantRecorded} (the store may call back before the attempt returns).
     */
    void expectGrant(String owner) {
        if (sessionKept) {
            acquiringOwners.putIfAbsent(owner, NO_LOSS);
        }
    }

    /** The acquisition of {@code owner} stopped trying: a loss reported for it from now on concerns nobody here. */
    void grantWithdrawn(String owner) {
        if (sessionKept) {
            acquiringOwners.remove(owner);
        }
    }

    /** {@code lease} was just published in its gate: a loss the store reported for its grant before applies now. */
    void grantRecorded(Lease lease) {
        if (sessionKept) {
            // After the lease is published: a loss reported from now on finds it; one reported before is here.
            String reported = acquiringOwners.remove(lease.owner);
            if (reported != null && !reported.equals(NO_LOSS)) {
                leaseLost(lease, reported);
            }
        }
    }

    /**
     * The store says a forced release (ordered by any JVM) removed {@code owner} from {@code key}: a lease of this
     * manager that it held is lost now, its turn goes to the JVM's next waiter, and the log and the listeners are told
     * (from the events thread: this is the store's thread, or another manager's caller). A forced release ordered
     * through this manager is left to it ({@link LockAdmin}), which tells on its caller's thread.
     */
    void forcedInStore(String key, String owner) {
        if (manager.admin().forcingOnThisThread()) {
            return;
        }
        for (Lease lease : manager.gates.of(key)) {
            if (lease.ownedBy(owner) && lease.markLost(ForcedReleases.reason(owner, ForcedReleases.REASON))) {
                if (lease.watched) {
                    manager.watchedLeases.decrementAndGet();
                }
                reportLost(lease, false, true);
            }
        }
    }

    /**
     * A session-keeping store reports a lease gone; the report counts only while that owner holds the key here, or
     * is acquiring it (then {@link #grantRecorded} applies it once the grant is recorded).
     */
    void storeReported(String key, String owner, String reason) {
        // Kept before the holder is looked at, while grantRecorded() runs after the lease is published: whichever
        // comes second sees the other.
        acquiringOwners.replace(owner, NO_LOSS, reason);
        Lease lease = manager.gates.exclusiveHolder(LockKind.Family.EXCLUSIVE, key);
        if (lease != null && lease.ownedBy(owner)) {
            leaseLost(lease, reason);
        }
    }
}
