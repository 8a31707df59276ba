package dev.dlock.zookeeper;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.SessionLeases;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The backend contract against a real ZooKeeper server in this JVM. The store keeps leases by its
 * session and fences with zxids, so the suite's watchdog tests check that no renewal is ever sent.
 * A crash stops the server (clients see their connection suspended); a restart brings it back with its data.
 */
class ZooKeeperContractTest extends StoreFailureContractTest {

    private static ZooKeeperTestServer zookeeper;
    private static CuratorFramework admin;

    @BeforeAll
    static void startZooKeeper() {
        zookeeper = ZooKeeperTestServer.start();
        admin = ZooKeeperBackendFactory.client(zookeeper.connectString(), 5);
    }

    @AfterAll
    static void stopZooKeeper() {
        if (admin != null) {
            admin.close();
        }
        if (zookeeper != null) {
            zookeeper.close();
        }
    }

    @Override
    protected BackendFactory factory() {
        return new ZooKeeperBackendFactory();
    }

    @Override
    protected String connection() {
        return zookeeper.connectString();
    }

    /** Deletes the holder's node, the one at the head of the key's queue. */
    @Override
    protected void deleteKey(String key) {
        try {
            String keyPath = ZooKeeperLockBackend.keyPath(ZooKeeperLockBackend.DEFAULT_BASE_PATH, key);
            var queue = admin.getChildren().forPath(keyPath);
            assertThat(queue).as("lock nodes of %s", key).hasSize(1);
            admin.delete().forPath(keyPath + "/" + queue.get(0));
        } catch (Exception e) {
            throw new AssertionError("could not delete the lock node of " + key, e);
        }
    }

    @Override
    protected void wipeStore() {
        try {
            admin.delete().deletingChildrenIfNeeded().forPath(ZooKeeperLockBackend.DEFAULT_BASE_PATH);
        } catch (KeeperException.NoNodeException e) {
            // Already empty.
        } catch (Exception e) {
            throw new AssertionError("could not wipe " + ZooKeeperLockBackend.DEFAULT_BASE_PATH, e);
        }
    }

    /**
     * The operations the factory's clients sent, once the count stopped moving: a new Curator client sends a
     * request of its own in the background right after connecting (it reads the ensemble configuration), which
     * must not be counted as the test's. Not the server's own count, which also counts each session's pings:
     * they come at any moment, and one falling inside a measurement failed it on a busy machine. Every request
     * of the backend goes through Curator, whose tracer sees it ({@link #theCountSeesEveryRequestOfAnAcquisition}).
     */
    @Override
    protected long storeCommandCount() {
        long count = ZooKeeperBackendFactory.operationsSent();
        for (int i = 0; i < 20; i++) {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
            long again = ZooKeeperBackendFactory.operationsSent();
            if (again == count) {
                return count;
            }
            count = again;
        }
        return count;
    }

    @Test
    void theCountSeesEveryRequestOfAnAcquisition() {
        LockBackend backend = factory().create(connection());
        try {
            long before = storeCommandCount();
            AcquireResult taken = backend.tryAcquire(LockKind.EXCLUSIVE, "counted", "me", SessionLeases.UNTIL_RELEASED);
            assertThat(taken).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(backend.release(LockKind.EXCLUSIVE, "counted", "me", ((AcquireResult.Acquired) taken).fencingToken()))
                    .isEqualTo(ReleaseResult.RELEASED);
            // At least: create the lock node, list the queue, delete the node.
            assertThat(storeCommandCount() - before).as("operations of one acquisition and its release").isGreaterThanOrEqualTo(3);
        } finally {
            factory().dispose(backend);
        }
    }

    @Override
    protected void crashStore() {
        zookeeper.crash();
    }

    @Override
    protected void restartStore() {
        zookeeper.restart();
    }

    /** Fewer turns than a one-round-trip store: an acquisition here is a queue node, a read of its siblings and a watch. */
    @Override
    protected int contendedTurnsPerThread() {
        return 150;
    }
}
