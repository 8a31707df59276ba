package dev.dlock.core;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Per-key state inside one {@link LockManager}: a first-come-first-served local turn so that only
 * one thread of this JVM contends in the store for a key (the rest queue here in arrival order, at
 * no cost to the store), the current lease, and the key's release-notice subscription while anyone
 * waits.
 */
final class KeyGate {

    volatile Lease holder;

    /** Guarded by the manager's gate map (only changed inside compute). */
    int users;

    private final ReentrantLock turnLock = new ReentrantLock();
    /** Threads waiting for the turn, in arrival order; each keeps its place while it checks its abort condition. */
    private final ArrayDeque<Condition> waiting = new ArrayDeque<>();
    private boolean taken;

    private ReleaseNotices.Subscription subscription;
    private Semaphore releaseSignals;

    /**
     * Waits for this JVM's turn on the key, in arrival order; null when it is ours, otherwise why not.
     * {@code abortIf} (may be null) is checked every {@code abortCheckNanos} without losing the place.
     * The turn is not owned by a thread: whoever releases the lease gives it back with {@link #leave()}.
     */
    LockNotAcquiredException.Reason enter(long deadlineNanos, BooleanSupplier abortIf, long abortCheckNanos)
            throws InterruptedException {
        turnLock.lock();
        try {
            if (!taken && waiting.isEmpty()) {
                taken = true;
                return null;
            }
            Condition myTurn = turnLock.newCondition();
            waiting.addLast(myTurn);
            boolean granted = false;
            try {
                while (true) {
                    if (!taken && waiting.peekFirst() == myTurn) {
                        waiting.removeFirst();
                        taken = true;
                        granted = true;
                        return null;
                    }
                    if (abortIf != null && abortRequested(abortIf)) {
                        return LockNotAcquiredException.Reason.ABORTED;
                    }
                    long remaining = deadlineNanos - System.nanoTime();
                    if (remaining <= 0) {
                        return LockNotAcquiredException.Reason.TIMEOUT;
                    }
                    myTurn.awaitNanos(abortIf == null ? remaining : Math.min(remaining, abortCheckNanos));
                }
            } finally {
                if (!granted) {
                    waiting.remove(myTurn);
                    signalNext();
                }
            }
        } finally {
            turnLock.unlock();
        }
    }

    /** Runs the caller's abort condition outside the gate's lock, so a slow condition never delays a release. */
    private boolean abortRequested(BooleanSupplier abortIf) {
        turnLock.unlock();
        try {
            return abortIf.getAsBoolean();
        } finally {
            turnLock.lock();
        }
    }

    /** Gives the turn back and wakes the first waiter. */
    void leave() {
        turnLock.lock();
        try {
            taken = false;
            signalNext();
        } finally {
            turnLock.unlock();
        }
    }

    private void signalNext() {
        Condition next = waiting.peekFirst();
        if (next != null && !taken) {
            next.signal();
        }
    }

    /** The signals raised by release notices for this key, subscribing on first use; empty when the store pushes none. */
    synchronized Optional<Semaphore> releaseSignals(Optional<ReleaseNotices> notices, String key, long maxWaitNanos)
            throws InterruptedException {
        if (notices.isEmpty()) {
            return Optional.empty();
        }
        if (subscription == null) {
            Semaphore signals = new Semaphore(0);
            subscription = notices.get().subscribe(key, signals::release);
            releaseSignals = signals;
            subscription.awaitActive(Duration.ofNanos(Math.max(0, maxWaitNanos)));
        }
        return Optional.of(releaseSignals);
    }

    /** True while release notices for the key are flowing. */
    synchronized boolean noticesActive() {
        return subscription != null && subscription.isActive();
    }

    /** Ends the key's subscription; called once the last user left the gate. */
    synchronized void closeSubscription() {
        if (subscription != null) {
            subscription.close();
            subscription = null;
        }
    }

    /** Waits up to {@code nanos} for a release notice. */
    static void awaitSignal(Semaphore signals, long nanos) throws InterruptedException {
        if (signals.tryAcquire(nanos, TimeUnit.NANOSECONDS)) {
            signals.drainPermits();
        }
    }
}
