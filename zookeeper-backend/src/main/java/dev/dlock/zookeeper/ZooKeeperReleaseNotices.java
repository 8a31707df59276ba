package dev.dlock.zookeeper;

import dev.dlock.core.spi.ReleaseNotices;
import org.apache.curator.framework.CuratorFramework;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Release notices for waiters in this JVM. They cost ZooKeeper nothing of their own: a waiting owner
 * already watches its predecessor in the key's queue (one watch per queued node, never the whole
 * queue), and that watch firing is the notice. A lost or regained connection notifies every
 * listener, because watch events may have been missed meanwhile.
 */
final class ZooKeeperReleaseNotices implements ReleaseNotices {

    private static final Logger log = LoggerFactory.getLogger(ZooKeeperReleaseNotices.class);

    private final CuratorFramework client;
    private final Function<String, String> keyPathOf;
    /** Listeners per key node path. */
    private final ConcurrentHashMap<String, Set<Listener>> listeners = new ConcurrentHashMap<>();

    ZooKeeperReleaseNotices(CuratorFramework client, Function<String, String> keyPathOf) {
        this.client = client;
        this.keyPathOf = keyPathOf;
    }

    @Override
    public Subscription subscribe(String key, Runnable onRelease) {
        Listener listener = new Listener(keyPathOf.apply(key), Objects.requireNonNull(onRelease, "onRelease"));
        listeners.computeIfAbsent(listener.keyPath, k -> ConcurrentHashMap.newKeySet()).add(listener);
        return listener;
    }

    /** A node in the queue under {@code keyPath} went away: the next owner may be first now. */
    void changed(String keyPath) {
        Set<Listener> keyListeners = listeners.get(keyPath);
        if (keyListeners != null) {
            keyListeners.forEach(Listener::notifyReleased);
        }
    }

    /** Every key may have changed unseen (connection lost or regained). */
    void changedAll() {
        listeners.values().forEach(keyListeners -> keyListeners.forEach(Listener::notifyReleased));
    }

    /** One listener on one key; active while the client is connected (watch events flow only then). */
    private final class Listener implements Subscription {
        private final String keyPath;
        private final Runnable onRelease;
        private volatile boolean closed;

        Listener(String keyPath, Runnable onRelease) {
            this.keyPath = keyPath;
            this.onRelease = onRelease;
        }

        void notifyReleased() {
            try {
                onRelease.run();
            } catch (RuntimeException e) {
                log.warn("dlock release listener for '{}' failed; ignored", keyPath, e);
            }
        }

        @Override
        public boolean awaitActive(Duration timeout) throws InterruptedException {
            long millis = Math.max(0, timeout.toMillis());
            return !closed && client.blockUntilConnected((int) Math.min(Integer.MAX_VALUE, millis), TimeUnit.MILLISECONDS);
        }

        @Override
        public boolean isActive() {
            return !closed && client.getZookeeperClient().isConnected();
        }

        @Override
        public void close() {
            closed = true;
            listeners.computeIfPresent(keyPath, (k, keyListeners) -> {
                keyListeners.remove(this);
                return keyListeners.isEmpty() ? null : keyListeners;
            });
        }
    }
}
