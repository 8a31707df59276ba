package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/** One acquisition's view of a {@link Lease}: re-entrant acquisitions share the lease, each with a handle of its own. */
final class LeaseHandle implements LockHandle {

    private static final AtomicIntegerFieldUpdater<LeaseHandle> CLOSED =
            AtomicIntegerFieldUpdater.newUpdater(LeaseHandle.class, "closed");

    private final Lease lease;
    /** True when this acquisition re-entered a lease its thread already held through an outer handle. */
    private final boolean reentrant;
    private volatile int closed;

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
    public LockHandle detachFromThread() {
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
