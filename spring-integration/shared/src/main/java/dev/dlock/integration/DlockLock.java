package dev.dlock.integration;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.core.LockRequest;
import org.springframework.dao.CannotAcquireLockException;
import org.springframework.dao.DataAccessResourceFailureException;

import java.time.Duration;
import java.util.ConcurrentModificationException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

/**
 * One key of a {@link DlockLockRegistry} as a {@link java.util.concurrent.locks.Lock} (on Spring Integration 7, a
 * {@code DistributedLock}). Each locking thread's hold is one dlock lease: the first {@code lock} of a thread takes it
 * in the store, later ones re-enter it with no store call, and the unlock that balances the first releases it. It keeps
 * the contract of Spring Integration's Redis and JDBC registries (each method's Javadoc says how); stricter, a
 * re-entry whose lease may have run out throws {@link ConcurrentModificationException}. The watchdog keeps the lease
 * while held ({@link #lock(Duration)} takes a fixed one, which the registry's {@code renewLock} extends); the holder's
 * token: {@link #fencingToken()}.
 * Details: docs/migration/spring-integration.md#where-dlocks-registry-differs-from-spring-integrations.
 */
public final class DlockLock implements LineLock {

    /**
     * The longest single wait handed to the engine; a wait without end ({@link #lock()}) asks again each time it runs
     * out. Far below the nanosecond range a deadline can hold.
     */
    private static final long WAIT_CHUNK_NANOS = TimeUnit.DAYS.toNanos(1);
    /** Waits at least this long count as waits without end. */
    private static final long FOREVER_NANOS = Long.MAX_VALUE / 4;

    private final DlockLockRegistry registry;
    private final String key;
    private final String storeKey;

    DlockLock(DlockLockRegistry registry, String key, String storeKey) {
        this.registry = registry;
        this.key = key;
        this.storeKey = storeKey;
    }

    /**
     * Locks, waiting as long as it takes, deaf to interrupts: an interrupt while waiting is kept and set again once the
     * lock is held. A thread that holds the lock already re-enters it.
     *
     * @throws ConcurrentModificationException when the calling thread holds the lock already and its lease was lost
     * @throws CannotAcquireLockException when the store cannot be reached
     */
    @Override
    public void lock() {
        lock(null, "lock()");
    }

    /**
     * Locks like {@link #lock()}, with a fixed lease of {@code ttl} that nothing renews but the registry's
     * {@code renewLock} (the key frees itself after it in the store). Re-entry keeps the lease the outer hold took.
     * (Spring Integration 7's {@code DistributedLock.lock(ttl)}.)
     *
     * @throws IllegalArgumentException when {@code ttl} is shorter than {@link LockRequest#MIN_LEASE_TIME}
     */
    public void lock(Duration ttl) {
        lock(validTtl(ttl), "lock(ttl)");
    }

    private void lock(Duration ttl, String call) {
        if (reenter(call)) {
            return;
        }
        boolean interrupted = false;
        try {
            while (true) {
                // Cleared before each wait: the engine would otherwise give up at once.
                interrupted |= Thread.interrupted();
                try {
                    take(Long.MAX_VALUE, ttl);
                    return;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Locks, waiting as long as it takes unless the thread is interrupted.
     *
     * @throws InterruptedException when the thread is interrupted on entry or while it waits (the status is cleared)
     * @throws ConcurrentModificationException when the calling thread holds the lock already and its lease was lost
     * @throws CannotAcquireLockException when the store cannot be reached
     */
    @Override
    public void lockInterruptibly() throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before locking '" + key + "'");
        }
        if (reenter("lockInterruptibly()")) {
            return;
        }
        take(Long.MAX_VALUE, null);
    }

    /**
     * Locks if no other owner holds the key now, without waiting; interrupts are ignored (the status is kept).
     *
     * @throws ConcurrentModificationException when the calling thread holds the lock already and its lease was lost
     * @throws CannotAcquireLockException when the store cannot be reached
     */
    @Override
    public boolean tryLock() {
        if (reenter("tryLock()")) {
            return true;
        }
        boolean interrupted = Thread.interrupted();
        try {
            return take(0, null);
        } catch (InterruptedException e) {
            interrupted = true;
            return false;
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Locks, waiting at most {@code time} (none when zero or negative) for another owner to release the key.
     *
     * @return false when the wait ran out with the key still held by another owner
     * @throws InterruptedException when the thread is interrupted on entry or while it waits (the status is cleared)
     * @throws ConcurrentModificationException when the calling thread holds the lock already and its lease was lost
     * @throws CannotAcquireLockException when the store cannot be reached
     */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        return tryLockWithin(Math.max(0, unit.toNanos(time)), null);
    }

    /**
     * Locks like {@link #tryLock(long, TimeUnit)}, waiting at most {@code waitTime}, with a fixed lease of {@code ttl}
     * that nothing renews but the registry's {@code renewLock}. (Spring Integration 7's
     * {@code DistributedLock.tryLock(waitTime, ttl)}.)
     *
     * @throws IllegalArgumentException when {@code ttl} is shorter than {@link LockRequest#MIN_LEASE_TIME}
     */
    public boolean tryLock(Duration waitTime, Duration ttl) throws InterruptedException {
        return tryLockWithin(waitTime.isNegative() ? 0 : saturatedNanos(waitTime), validTtl(ttl));
    }

    private boolean tryLockWithin(long waitNanos, Duration ttl) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before locking '" + key + "'");
        }
        if (reenter("tryLock(time)")) {
            return true;
        }
        return take(waitNanos, ttl);
    }

    /**
     * Unlocks one hold of the calling thread; the unlock that balances its first lock releases the lease in the store.
     *
     * @throws IllegalStateException when the calling thread does not hold the lock (nothing changes)
     * @throws ConcurrentModificationException when the lease was lost before this release: another owner may have held
     *         the key meanwhile (the cause, a {@link LockLostException}, says why); the lock is no longer held
     * @throws DataAccessResourceFailureException when the store could not be told: the key is no longer renewed and
     *         expires by itself; the lock is no longer held
     */
    @Override
    public void unlock() {
        Thread me = Thread.currentThread();
        DlockLockRegistry.Hold hold = registry.hold(storeKey, me);
        if (hold == null) {
            throw new IllegalStateException("The current thread does not hold lock '" + key + "' of " + registry
                    + ": only the thread that locked it may unlock it");
        }
        if (--hold.count > 0) {
            return;
        }
        registry.ended(storeKey, me);
        try {
            hold.handle.close();
        } catch (LockLostException e) {
            throw lost(e);
        } catch (LockBackendException e) {
            throw new DataAccessResourceFailureException("Failed to release lock '" + key + "' of " + registry
                    + " in the store: the outcome is unknown, and the key expires by itself", e);
        }
    }

    /** Not supported, as in Spring Integration's registries: a condition cannot span JVMs. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("Conditions are not supported");
    }

    /**
     * The fencing token of the calling thread's hold: larger than every token issued before for this key, on every
     * store that issues them; pass it to the resources the lock guards. A leader's token is its epoch: read it in
     * {@code Candidate.onGranted} (it runs on the thread that holds the lock) and hand it on.
     *
     * @throws IllegalStateException when the calling thread does not hold the lock
     * @throws UnsupportedOperationException when the store issues no fencing tokens (memcached)
     * @throws LockLostException when the lease was lost before its token was issued
     */
    public long fencingToken() {
        DlockLockRegistry.Hold hold = currentHold();
        if (hold == null) {
            throw new IllegalStateException("The current thread does not hold lock '" + key + "' of " + registry
                    + ": a fencing token belongs to a hold; read it on the thread that locked");
        }
        return hold.handle.fencingToken();
    }

    /** Whether the calling thread locked this lock and has not unlocked it yet (whether or not the lease still lives). */
    public boolean isHeldByCurrentThread() {
        return currentHold() != null;
    }

    /**
     * Whether the calling thread holds the lock and the store cannot have let the key go: false once its lease is
     * lost or overdue for renewal (its unlock will then throw).
     */
    public boolean isLeaseHeld() {
        DlockLockRegistry.Hold hold = currentHold();
        return hold != null && hold.handle.isHeld();
    }

    /** The key this lock was obtained for (without the registry key). */
    public String key() {
        return key;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof DlockLock lock && lock.registry == registry && lock.key.equals(key);
    }

    @Override
    public int hashCode() {
        return storeKey.hashCode();
    }

    @Override
    public String toString() {
        return "DlockLock{key=" + key + ", storeKey=" + storeKey + ", heldByCurrentThread=" + isHeldByCurrentThread() + "}";
    }

    DlockLockRegistry.Hold currentHold() {
        return registry.hold(storeKey, Thread.currentThread());
    }

    /**
     * Counts the calling thread in again when it holds the lock already; false when it does not.
     *
     * @throws ConcurrentModificationException when its lease may have run out: re-entering would let the outer hold
     *         go on as if nothing happened
     */
    private boolean reenter(String call) {
        DlockLockRegistry.Hold hold = currentHold();
        if (hold == null) {
            return false;
        }
        if (!hold.handle.isHeld()) {
            throw lost(new LockLostException(registry.registryKey, storeKey, "re-entering " + call + " a hold whose lease "
                    + "may have run out in the store (" + hold.handle.state() + "); unlock it, and lock again"));
        }
        hold.count++;
        return true;
    }

    /**
     * Takes the key in the store for the calling thread, waiting at most {@code waitNanos} ({@link #FOREVER_NANOS} or
     * more: without end).
     *
     * @return false when the wait ran out
     * @throws InterruptedException when the thread was interrupted while waiting (the status is cleared)
     */
    private boolean take(long waitNanos, Duration ttl) throws InterruptedException {
        boolean forever = waitNanos >= FOREVER_NANOS;
        long deadline = System.nanoTime() + (forever ? 0 : waitNanos);
        while (true) {
            long remaining = forever ? WAIT_CHUNK_NANOS : Math.max(0, deadline - System.nanoTime());
            LockRequest request = LockRequest.builder(storeKey).name(registry.registryKey).callSite(registry.callSite)
                    .waitTime(Duration.ofNanos(Math.min(remaining, WAIT_CHUNK_NANOS))).leaseTime(ttl).build();
            LockHandle handle;
            try {
                handle = registry.locks.acquire(request);
            } catch (LockNotAcquiredException e) {
                if (e.reason() == LockNotAcquiredException.Reason.INTERRUPTED) {
                    Thread.interrupted();
                    InterruptedException interrupted = new InterruptedException("interrupted while waiting for lock '"
                            + key + "' of " + registry);
                    interrupted.initCause(e);
                    throw interrupted;
                }
                if (!forever && deadline - System.nanoTime() <= 0) {
                    return false;
                }
                continue;
            } catch (LockBackendException e) {
                throw new CannotAcquireLockException("Failed to lock '" + key + "' of " + registry, e);
            }
            registry.held(storeKey, Thread.currentThread(), new DlockLockRegistry.Hold(handle, ttl));
            return true;
        }
    }

    private static ConcurrentModificationException lost(LockLostException cause) {
        return new ConcurrentModificationException("Lock was released in the store due to expiration. The integrity of "
                + "data protected by this lock may have been compromised. " + cause.getMessage(), cause);
    }

    private static Duration validTtl(Duration ttl) {
        if (ttl == null) {
            throw new NullPointerException("ttl");
        }
        return LockRequest.validLeaseTime(ttl);
    }

    private static long saturatedNanos(Duration duration) {
        try {
            return duration.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }
}
