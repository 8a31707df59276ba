package dev.dlock.core;

import dev.dlock.core.spi.ReleaseNotices;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A key's release notices while anyone in this JVM waits for it in the store: one subscription per key however many
 * wait, the count of notices seen (a waiter reads it before its store attempt and sleeps until it grows past its turn,
 * so a notice between the attempt and the sleep is never missed), and the asynchronous waiters to wake on each. One per
 * {@link KeyGate}; the subscription lives until the gate's last user leaves. Nothing else is locked under the count's
 * lock, and wakers run outside it.
 */
final class KeyNotices {

    private final KeyGate.TimedWait timedWait;
    /**
     * Guards {@link #subscription}: a lock, not a monitor, and never held while the store's notices come up, so the
     * key's other callers never wait behind that round trip and a virtual thread waiting for it holds no monitor
     * (which pins it to its carrier on JDK 21 to 23).
     */
    private final ReentrantLock subscriptionLock = new ReentrantLock();
    private ReleaseNotices.Subscription subscription;
    /** Until when the caller that made {@link #subscription} waits for it to flow; later callers wait no longer. */
    private long activationDeadlineNanos;
    /** Wake the asynchronous acquisitions waiting in the store on a release notice. */
    private final Set<Runnable> wakers = ConcurrentHashMap.newKeySet();
    /** Release notices seen so far; a waiter in the store waits for the count to reach its turn. */
    private final ReentrantLock noticeLock = new ReentrantLock();
    private final Condition noticed = noticeLock.newCondition();
    private volatile long noticeCount;

    KeyNotices(KeyGate.TimedWait timedWait) {
        this.timedWait = timedWait;
    }

    /**
     * Subscribes to the key's release notices unless subscribed already, waits up to {@code maxWaitNanos} for them to
     * flow, and runs {@code waker} (when not null) on every notice until {@link #stopWaking}; nothing when the store
     * pushes none. A caller that finds the subscription still coming up waits with the one that made it, until that
     * one's wait ends at the latest, so that none tries the store again before notices could reach it. The wait holds
     * no lock.
     */
    void subscribe(Optional<ReleaseNotices> notices, String key, Runnable waker, long maxWaitNanos) throws InterruptedException {
        if (notices.isEmpty()) {
            return;
        }
        ReleaseNotices.Subscription current;
        long waitNanos;
        subscriptionLock.lock();
        try {
            if (waker != null) {
                wakers.add(waker);
            }
            long now = System.nanoTime();
            if (subscription == null) {
                subscription = notices.get().subscribe(key, () -> {
                    countNotice();
                    wakers.forEach(Runnable::run);
                });
                activationDeadlineNanos = now + maxWaitNanos;
            }
            current = subscription;
            waitNanos = Math.min(maxWaitNanos, activationDeadlineNanos - now);
        } finally {
            subscriptionLock.unlock();
        }
        if (waitNanos > 0 && !current.isActive()) {
            current.awaitActive(Duration.ofNanos(waitNanos));
        }
    }

    /** Ends {@link #subscribe}'s waking of {@code waker} (may be null); the subscription stays while the gate has users. */
    void stopWaking(Runnable waker) {
        if (waker != null) {
            wakers.remove(waker);
        }
    }

    private void countNotice() {
        noticeLock.lock();
        try {
            noticeCount++;
            noticed.signalAll();
        } finally {
            noticeLock.unlock();
        }
    }

    /**
     * Wakes every thread waiting between store attempts, as a release notice would: the manager closes, and each one's
     * next attempt fails at once.
     */
    void wakeWaiters() {
        countNotice();
    }

    /** How many release notices arrived so far; read before a store attempt, for {@link #awaitNotices}. */
    long noticeCount() {
        return noticeCount;
    }

    /**
     * Waits up to {@code nanos} until {@code count} release notices arrived in all: a waiter asks again once enough
     * releases happened for its turn to come (fair waiters all wait in the store at once).
     */
    void awaitNotices(long count, long nanos) throws InterruptedException {
        noticeLock.lock();
        try {
            long left = nanos;
            while (noticeCount < count && left > 0) {
                left = timedWait.awaitNanos(noticeLock, noticed, left);
            }
        } finally {
            noticeLock.unlock();
        }
    }

    /** True while release notices for the key are flowing. */
    boolean active() {
        subscriptionLock.lock();
        try {
            return subscription != null && subscription.isActive();
        } finally {
            subscriptionLock.unlock();
        }
    }

    /** Ends the key's subscription; called once the last user left the gate. */
    void close() {
        subscriptionLock.lock();
        try {
            if (subscription != null) {
                subscription.close();
                subscription = null;
            }
        } finally {
            subscriptionLock.unlock();
        }
    }
}
