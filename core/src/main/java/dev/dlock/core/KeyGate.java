package dev.dlock.core;

import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One key's state inside one {@link LockManager}, per {@link LockKind.Family family} (the families are separate locks
 * in the store): the {@link LocalTurn local turn} that lets one thread of this JVM at a time ask the store, the
 * {@link KeyHolders leases held}, and the {@link KeyNotices release notices} waiters sleep on. The manager keeps a
 * gate while anyone uses it (an acquisition under way, or a lease held) and drops it with the last user.
 */
final class KeyGate {

    /** How a thread waits with a timeout: the JDK's clock, or a model checker's that moves only when it says so. */
    interface TimedWait {
        /** The JDK's timed wait. */
        TimedWait JDK = (lock, condition, nanos) -> condition.awaitNanos(nanos);

        /** As {@link Condition#awaitNanos}, holding {@code lock}, {@code condition}'s lock. */
        long awaitNanos(ReentrantLock lock, Condition condition, long nanos) throws InterruptedException;
    }

    final KeyHolders holders = new KeyHolders();
    final LocalTurn turn;
    final KeyNotices notices;

    /** Guarded by the manager's gate map (only changed inside compute). */
    int users;

    KeyGate(TimedWait timedWait) {
        this.turn = new LocalTurn(holders, timedWait);
        this.notices = new KeyNotices(timedWait);
    }
}
