package dev.dlock.core;

import dev.dlock.core.spi.StoreNode;
import java.time.Duration;
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
    final LockKind kind;
    final String owner;
    final long fencingToken;
    final long leaseMillis;
    final boolean watched;
    /** True when the store keeps the lease alive by its session: it has no expiry of its own, only a reported loss. */
    final boolean keptBySession;
    final StoreNode node;
    /** True when the lease keeps this JVM's turn on the key until released (exclusive kinds); shared leases give it back at once. */
    final boolean ownsTurn;
    final long acquiredAtNanos;
    /** Until when a release only shortens the lease instead of freeing the key ({@code lockAtLeastFor}); 0 for never. */
    final long keepUntilNanos;

    /**
     * Conservative local estimate of when the store lets the lease run out: send time of the last
     * confirmed write + lease. Before it, the store cannot have let the key go; after it, it may have.
     */
    volatile long expiresAtNanos;
    volatile Thread ownerThread;
    volatile String lostReason;
    volatile long renewals;
    /** The watchdog slot the lease waits in; written under that slot's monitor. */
    volatile Watchdog.Slot slot;
    /** How many times in a row the key passed to this lease from a local holder while another owner waited for it. */
    int handOffStreak;
    /** True from the moment the watchdog hands the lease to a renewal call until the answer is applied; guarded by this. */
    boolean renewing;

    private volatile LockState state = LockState.HELD;
    private int holds = 1;

    Lease(LockManager manager, KeyGate gate, String lockName, String key, LockKind kind, String owner, long fencingToken,
          long leaseMillis, boolean watched, boolean keptBySession, StoreNode node, boolean ownsTurn, long sentAtNanos,
          Duration lockAtLeastFor) {
        this.manager = manager;
        this.gate = gate;
        this.lockName = lockName;
        this.key = key;
        this.kind = kind;
        this.owner = owner;
        this.fencingToken = fencingToken;
        this.leaseMillis = leaseMillis;
        this.watched = watched;
        this.keptBySession = keptBySession;
        this.node = node;
        this.ownsTurn = ownsTurn;
        this.acquiredAtNanos = System.nanoTime();
        this.keepUntilNanos = lockAtLeastFor == null ? 0 : acquiredAtNanos + lockAtLeastFor.toNanos();
        this.expiresAtNanos = sentAtNanos + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        this.ownerThread = Thread.currentThread();
    }

    long renewalIntervalNanos() {
        return TimeUnit.MILLISECONDS.toNanos(leaseMillis) / 3;
    }

    /** True until the local expiry estimate: the store cannot have let the key go yet. */
    boolean surelyLive(long nowNanos) {
        return keptBySession || nowNanos - expiresAtNanos < 0;
    }

    boolean isHeld() {
        return state == LockState.HELD && surelyLive(System.nanoTime());
    }

    /** The state as the holder sees it: a held lease whose expiry passed unconfirmed may be gone, so it reads LOST. */
    LockState state() {
        LockState current = state;
        return current == LockState.HELD && !surelyLive(System.nanoTime()) ? LockState.LOST : current;
    }

    /** The recorded state, without the expiry view. */
    LockState recordedState() {
        return state;
    }

    /**
     * Counts one more re-entrant hold; false when the lease was released meanwhile. A lost lease, or
     * one whose expiry passed without a confirmed renewal, cannot be re-entered without a store call.
     */
    synchronized boolean reenter() {
        if (state == LockState.RELEASED) {
            return false;
        }
        if (state == LockState.LOST) {
            throw new LockLostException(lockName, key, lostReason);
        }
        if (!surelyLive(System.nanoTime())) {
            throw new LockLostException(lockName, key, watched
                    ? "re-entry refused: no renewal of the " + leaseMillis + " ms lease was confirmed in time, so the store may have let the key go"
                    : "re-entry refused: the fixed lease of " + leaseMillis + " ms ran out");
        }
        holds++;
        return true;
    }

    /**
     * Drops one hold. When it was the last, marks the lease released in the same step — so that no
     * re-entry can slip in between — and returns the state it had (HELD or LOST); otherwise null.
     */
    synchronized LockState dropHold() {
        if (--holds > 0) {
            return null;
        }
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

    /** Records a renewal sent at {@code sentAtNanos} and confirmed; false when the lease is no longer held. */
    synchronized boolean renewed(long sentAtNanos) {
        if (state != LockState.HELD) {
            return false;
        }
        expiresAtNanos = sentAtNanos + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        renewals++;
        return true;
    }

    /** Records that the renewal in flight was answered or given up, and wakes a release waiting for it; see {@link #renewing}. */
    synchronized void renewalAnswered() {
        renewing = false;
        notifyAll();
    }

    /**
     * Waits up to {@code nanos} until no renewal of this lease is in flight, so that a write sent afterwards reaches
     * the store after it; false when one still is. An interrupt ends the wait early and is kept.
     */
    synchronized boolean awaitRenewalAnswer(long nanos) {
        long end = System.nanoTime() + nanos;
        while (renewing) {
            long left = end - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return !renewing;
            }
        }
        return true;
    }

    @Override
    public String toString() {
        String of = kind == LockKind.EXCLUSIVE ? "" : " (" + kind + ")";
        return "lock '" + lockName + "'" + of + " on key '" + key + "'";
    }
}
