package dev.dlock.core;

import java.util.concurrent.TimeUnit;

/**
 * The JVM-side record of one acquisition of a key: owner token, fencing token, re-entry count,
 * state and lease bookkeeping. Shared by every handle of the acquisition.
 */
final class Lease {

    final LockManager manager;
    final KeyGate gate;
    final String lockName;
    final String key;
    final String owner;
    final long fencingToken;
    final long leaseMillis;
    final boolean watched;
    final Object renewalGroup;
    final long acquiredAtNanos;

    /** Conservative local estimate of when the store lets the lease run out: send time of the last successful write + lease. */
    volatile long expiresAtNanos;
    volatile Thread ownerThread;
    volatile LockState state = LockState.HELD;
    volatile String lostReason;
    volatile long renewals;
    /** The watchdog slot the lease waits in; written under that slot's monitor. */
    volatile Watchdog.Slot slot;

    private int holds = 1;

    Lease(LockManager manager, KeyGate gate, String lockName, String key, String owner, long fencingToken,
          long leaseMillis, boolean watched, Object renewalGroup, long sentAtNanos) {
        this.manager = manager;
        this.gate = gate;
        this.lockName = lockName;
        this.key = key;
        this.owner = owner;
        this.fencingToken = fencingToken;
        this.leaseMillis = leaseMillis;
        this.watched = watched;
        this.renewalGroup = renewalGroup;
        this.acquiredAtNanos = System.nanoTime();
        this.expiresAtNanos = sentAtNanos + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        this.ownerThread = Thread.currentThread();
    }

    long renewalIntervalNanos() {
        return TimeUnit.MILLISECONDS.toNanos(leaseMillis) / 3;
    }

    boolean isHeld() {
        return state == LockState.HELD && (watched || System.nanoTime() - expiresAtNanos < 0);
    }

    /** Counts one more re-entrant hold; false when the lease was released meanwhile. A lost lease cannot be re-entered. */
    synchronized boolean reenter() {
        if (state == LockState.LOST) {
            throw new LockLostException(lockName, key, lostReason);
        }
        if (state == LockState.RELEASED) {
            return false;
        }
        holds++;
        return true;
    }

    /** Drops one hold; true when it was the last one and the key must be released. */
    synchronized boolean dropHold() {
        return --holds == 0;
    }

    /** Marks the lease released; returns the state it had (HELD or LOST). */
    synchronized LockState finish() {
        LockState before = state;
        state = LockState.RELEASED;
        return before;
    }

    /** Marks a held lease lost; false when it was already released or lost. */
    synchronized boolean markLost(String reason) {
        if (state != LockState.HELD) {
            return false;
        }
        lostReason = reason;
        state = LockState.LOST;
        return true;
    }

    /** Records a successful renewal sent at {@code sentAtNanos}; false when the lease is no longer held. */
    synchronized boolean renewed(long sentAtNanos) {
        if (state != LockState.HELD) {
            return false;
        }
        expiresAtNanos = sentAtNanos + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        renewals++;
        return true;
    }

    @Override
    public String toString() {
        return "lock '" + lockName + "' on key '" + key + "'";
    }
}
