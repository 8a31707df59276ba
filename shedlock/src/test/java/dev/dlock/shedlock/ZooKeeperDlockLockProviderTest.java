package dev.dlock.shedlock;

import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.zookeeper.ZooKeeperBackendFactory;
import dev.dlock.zookeeper.ZooKeeperServerExtension;

/**
 * The provider's contract on a real ZooKeeper server (in-process, on a free loopback port), where ShedLock users of
 * its Curator provider come from; every instance has a client, and so a session, of its own.
 */
class ZooKeeperDlockLockProviderTest extends DlockLockProviderContract {

    private static final ZooKeeperBackendFactory ZOOKEEPER = new ZooKeeperBackendFactory();

    @RegisterExtension
    static final ZooKeeperServerExtension zookeeper = new ZooKeeperServerExtension();

    @Override
    protected LockBackend newBackend() {
        return ZOOKEEPER.create(zookeeper.connectString());
    }

    @Override
    protected void dispose(LockBackend backend) {
        ZOOKEEPER.dispose(backend);
    }
}
