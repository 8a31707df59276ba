package dev.dlock.zookeeper;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.StoredHolder;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.KeeperException;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * Who holds a key in ZooKeeper, and an operator's forced release. The holder is the owner written in the lowest node
 * of the key's queue; ZooKeeper keeps no lease time (a watchdog-managed lease lives with its holder's session, and a
 * fixed lease is ended by its holder's own JVM), so every holder reads {@link StoredHolder#NO_EXPIRY}. A forced release
 * deletes that node: the holder's watch on it reports the lease lost, and the next node's owner, watching it, is told
 * to look again. The next token is a later zxid, so still larger than every earlier one. The queue keeps exclusive
 * locks only: other kinds have no holders here.
 */
final class ZooKeeperHolderInspection implements HolderInspection {

    /** Times the lowest node may vanish between listing and reading it before the key counts as changing too fast. */
    private static final int ATTEMPTS = 5;

    private final CuratorFramework client;
    private final UnaryOperator<String> keyPath;

    ZooKeeperHolderInspection(CuratorFramework client, UnaryOperator<String> keyPath) {
        this.client = client;
        this.keyPath = keyPath;
    }

    @Override
    public List<StoredHolder> holders(LockKind kind, String key) {
        return holder(kind, key, false);
    }

    @Override
    public List<StoredHolder> forceRelease(LockKind kind, String key) {
        return holder(kind, key, true);
    }

    /** The owner of the key's lowest node, which is deleted when {@code delete}; retried while nodes come and go. */
    private List<StoredHolder> holder(LockKind kind, String key, boolean delete) {
        Objects.requireNonNull(kind, "kind");
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            return List.of();
        }
        String path = keyPath.apply(key);
        try {
            for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
                List<String> queue;
                try {
                    queue = new ArrayList<>(client.getChildren().forPath(path));
                } catch (KeeperException.NoNodeException e) {
                    return List.of();
                }
                if (queue.isEmpty()) {
                    return List.of();
                }
                queue.sort(Comparator.comparing(ZooKeeperLockBackend::sequenceOf));
                String lowest = ZKPaths.makePath(path, queue.get(0));
                try {
                    String owner = new String(client.getData().forPath(lowest), StandardCharsets.UTF_8);
                    if (delete) {
                        client.delete().forPath(lowest);
                    }
                    return List.of(new StoredHolder(owner, StoredHolder.NO_EXPIRY));
                } catch (KeeperException.NoNodeException e) {
                    // Released (or forced) between the listing and the read: look again.
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failure(delete, key, e);
        } catch (Exception e) {
            throw failure(delete, key, e);
        }
        throw new LockBackendException("dlock could not read the holder of key '" + key + "' in ZooKeeper: its lowest "
                + "node vanished " + ATTEMPTS + " times in a row", null);
    }

    private static LockBackendException failure(boolean delete, String key, Exception e) {
        return LockBackendException.storeFailure("dlock could not " + (delete ? "force the release of" : "read the holder of")
                + " key '" + key + "' in ZooKeeper", e);
    }
}
