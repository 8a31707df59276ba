package dev.dlock.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import dev.dlock.core.spi.ReleaseNotices;

/**
 * Release notices of a {@link RedlockBackend}: one subscription per master (each over that master's
 * single subscriber connection). A holder releases on every master, so a notice from any live
 * master is enough to wake a waiter; a dead master's subscription simply never turns active.
 */
final class RedlockReleaseNotices implements ReleaseNotices {

    private static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final List<ReleaseNotices> perNode;

    RedlockReleaseNotices(List<ReleaseNotices> perNode) {
        this.perNode = List.copyOf(perNode);
    }

    /** Subscribes {@code key} on every master; {@code onRelease} may run once per master for one release. */
    @Override
    public Subscription subscribe(String key, Runnable onRelease) {
        List<Subscription> subscriptions = new ArrayList<>(perNode.size());
        try {
            for (ReleaseNotices notices : perNode) {
                subscriptions.add(notices.subscribe(key, onRelease));
            }
        } catch (RuntimeException e) {
            subscriptions.forEach(Subscription::close);
            throw e;
        }
        return new AnyNodeSubscription(subscriptions);
    }

    /** Active while any master delivers notices for the key. */
    private static final class AnyNodeSubscription implements Subscription {

        private final List<Subscription> subscriptions;
        private volatile boolean closed;

        AnyNodeSubscription(List<Subscription> subscriptions) {
            this.subscriptions = subscriptions;
        }

        @Override
        public boolean awaitActive(Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!closed) {
                for (Subscription subscription : subscriptions) {
                    // A short wait on each in turn: whichever master confirms first ends the wait.
                    long slice = Math.min(POLL_NANOS, Math.max(0, deadline - System.nanoTime()));
                    if (subscription.awaitActive(Duration.ofNanos(slice))) {
                        return true;
                    }
                }
                if (System.nanoTime() - deadline >= 0) {
                    return false;
                }
            }
            return false;
        }

        @Override
        public boolean isActive() {
            for (Subscription subscription : subscriptions) {
                if (subscription.isActive()) {
                    return true;
                }
            }
            return false;
        }

        @Override
        public void close() {
            closed = true;
            subscriptions.forEach(Subscription::close);
        }
    }
}
