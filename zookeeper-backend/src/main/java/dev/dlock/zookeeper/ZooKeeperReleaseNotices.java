package dev.dlock.zookeeper;

import dev.dlock.core.spi.KeyListeners;
import dev.dlock.core.spi.ReleaseNotices;
import org.apache.curator.framework.CuratorFramework;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Release notices for waiters in this JVM. They cost ZooKeeper nothing of their own: a waiting owner
 * already watches its predecessor in the key's queue (one watch per queued node, never the whole
 * queue), and that watch firing is the notice. A lost or regained connection notifies every
 * listener, because watch events may have been missed meanwhile.
 */
final class ZooKeeperReleaseNotices implements ReleaseNotices {

    private final CuratorFramework client;
    private final Function<String, String> keyPathOf;
    /** Listeners per key node path. */
    private final KeyListeners<Listener> listeners = new KeyListeners<>();

    ZooKeeperReleaseNotices(CuratorFramework client, Function<String, String> keyPathOf) {
        this.client = client;
        this.keyPathOf = keyPathOf;
    }

    @Override
    public Subscription subscribe(String key, Runnable onRelease) {
        return listeners.add(new Listener(keyPathOf.apply(key), onRelease));
    }

    /** A node in the queue under {@code keyPath} went away: the next owner may be first now. */
    void changed(String keyPath) {
        listeners.wake(keyPath, "release");
    }

    /** Every key may have changed unseen (connection lost or regained). */
    void changedAll() {
        listeners.wakeAll("connection change");
    }

    /** One listener on one key; active while the client is connected (watch events flow only then). */
    private final class Listener extends KeyListeners.Listener {

        Listener(String keyPath, Runnable onRelease) {
            super(keyPath, onRelease);
        }

        @Override
        public boolean awaitActive(Duration timeout) throws InterruptedException {
            long millis = Math.max(0, timeout.toMillis());
            return !isClosed() && client.blockUntilConnected((int) Math.min(Integer.MAX_VALUE, millis), TimeUnit.MILLISECONDS);
        }

        @Override
        public boolean isActive() {
            return !isClosed() && client.getZookeeperClient().isConnected();
        }
    }
}
