package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/** One acquisition's view of a {@link Lease}: re-entrant acquisitions share the lease, each with a handle of its own. */
final class LeaseHandle implements LockHandle {

    private static final AtomicIntegerFieldUpdater<LeaseHandle> CLOSED =
            AtomicIntegerFieldUpdater.newUpdater(LeaseHandle.class, "closed");

    private final Lease lease;
    /** True when this acquisition re-entered a lease its thread already held through an outer handle. */
    private final boolean reentrant;
    private volatile int closed;
    /** The loss reactions armed through this handle, disarmed when it closes; guarded by this. */
    private List<LeaseStops.Armed> reactions;

    /** The lease this handle releases (engine tests and models look at it). */
    Lease lease() {
        return lease;
    }

    LeaseHandle(Lease lease, boolean reentrant) {
        this.lease = lease;
        this.reentrant = reentrant;
    }

    @Override
    public String lockName() {
        return lease.lockName;
    }

    @Override
    public String key() {
        return lease.key;
    }

    @Override
    public long fencingToken() {
        if (!lease.manager.capabilities().fencing()) {
            throw new UnsupportedOperationException(lease + ": the store " + lease.manager.backend().getClass().getSimpleName()
                    + " issues no fencing tokens, so this lock cannot protect a resource against a stale holder;"
                    + " use a store that fences (Redis, ZooKeeper) where correctness depends on the lock");
        }
        long issued = lease.issuedToken();
        if (issued != AcquireResult.Acquired.TOKEN_ON_REQUEST) {
            return issued;
        }
        if (closed != 0) {
            throw new IllegalStateException(lease + " was released through this handle before its fencing token was "
                    + "asked for; a token is issued only while the lock is held (read it inside the critical section)");
        }
        return lease.fencingToken();
    }

    @Override
    public boolean isHeld() {
        return closed == 0 && lease.isHeld();
    }

    @Override
    public LockState state() {
        return closed == 0 ? lease.state() : LockState.RELEASED;
    }

    @Override
    public void extend(Duration leaseTime) {
        requireOpen();
        LeaseExtender.extend(lease, leaseTime, null, false);
    }

    @Override
    public void extend(Duration leaseTime, Duration lockAtLeastFor) {
        requireOpen();
        LeaseExtender.extend(lease, leaseTime, lockAtLeastFor == null || lockAtLeastFor.isZero() ? null : lockAtLeastFor, true);
    }

    private void requireOpen() {
        if (closed != 0) {
            throw new IllegalStateException(lease + " was released through this handle; only a held lock can be extended");
        }
    }

    @Override
    public LossReaction onLeaseLost(Runnable stop) {
        if (stop == null) {
            throw new IllegalArgumentException("onLeaseLost: the reaction is null");
        }
        return armed(stop, null);
    }

    @Override
    public LossReaction interruptOnLeaseLost() {
        return armed(null, Thread.currentThread());
    }

    private LossReaction armed(Runnable stop, Thread interrupt) {
        if (closed != 0) {
            throw new IllegalStateException(lease + " was released through this handle; a loss reaction is armed only while it is held");
        }
        LeaseStops.Armed reaction = lease.stops.arm(stop, interrupt);
        synchronized (this) {
            if (reactions == null) {
                reactions = new ArrayList<>(1);
            }
            reactions.add(reaction);
        }
        if (closed != 0) {
            // Closed while arming: the close may have missed it.
            reaction.close();
        }
        return reaction;
    }

    /** Disarms the reactions armed through this handle; only the interrupts when {@code interruptsOnly} (the work left the thread). */
    private void disarm(boolean interruptsOnly) {
        List<LeaseStops.Armed> armed;
        synchronized (this) {
            if (reactions == null) {
                return;
            }
            armed = new ArrayList<>(reactions);
            if (interruptsOnly) {
                armed.removeIf(reaction -> !reaction.interrupts());
            }
            reactions.removeAll(armed);
        }
        armed.forEach(LeaseStops.Armed::close);
    }

    @Override
    public LockHandle detachFromThread() {
        // The work moves off this thread: an interrupt would now hit whatever the thread does next.
        disarm(true);
        // A re-entrant hold only borrows the outer acquisition's lease: the outer holder keeps it.
        if (!reentrant) {
            lease.ownerThread = null;
            lease.manager.detached(lease);
        }
        return this;
    }

    @Override
    public LockHandle attachToCurrentThread() {
        if (!reentrant) {
            lease.ownerThread = Thread.currentThread();
        }
        return this;
    }

    @Override
    public void close() {
        if (!CLOSED.compareAndSet(this, 0, 1)) {
            throw new IllegalStateException(lease + " was already released through this handle: a handle is closed once "
                    + "(try-with-resources closes it; do not also close it inside the block)");
        }
        // Before the release: a loss found from now on ends no work, the work has ended.
        disarm(false);
        lease.manager.releases.release(lease, !reentrant);
    }

    @Override
    public String toString() {
        long issued = lease.issuedToken();
        // Never issues one: a diagnostic must not write to the store.
        String token = !lease.manager.capabilities().fencing() ? "no fencing token"
                : issued == AcquireResult.Acquired.TOKEN_ON_REQUEST ? "fencing token not issued" : "fencing token " + issued;
        return lease + " (" + token + ", " + state() + ")";
    }
}
