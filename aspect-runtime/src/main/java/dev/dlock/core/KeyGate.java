package dev.dlock.core;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Per-key state inside one {@link LockManager}: a fair local permit so that only one thread of this
 * JVM contends in the store for a key (the rest queue here in arrival order, at no cost to the
 * store), the current lease, and the key's release-notice subscription while anyone waits.
 */
final class KeyGate {

    /** Fair, and owner-less so that a detached lease can be released from another thread. */
    final Semaphore permit = new Semaphore(1, true);
    volatile Lease holder;

    /** Guarded by the manager's gate map (only changed inside compute). */
    int users;

    private ReleaseNotices.Subscription subscription;
    private Semaphore releaseSignals;

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
