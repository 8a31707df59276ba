package dev.dlock.integration;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.zookeeper.ZooKeeperBackendFactory;
import dev.dlock.zookeeper.ZooKeeperServerExtension;

/**
 * The registry's Lock contract on a real ZooKeeper server (in-process, on a free loopback port): what users of
 * Spring Integration's {@code ZookeeperLockRegistry} move from. Each manager has a Curator client, and so a session,
 * of its own, as two JVMs would.
 */
class ZooKeeperLockRegistryTest extends LockRegistryContract {

    private static final ZooKeeperBackendFactory ZOOKEEPER = new ZooKeeperBackendFactory();

    @RegisterExtension
    static final ZooKeeperServerExtension zookeeper = new ZooKeeperServerExtension();
    private final List<LockBackend> backends = new ArrayList<>();

    @Override
    protected LockBackend newBackend() {
        LockBackend backend = ZOOKEEPER.create(zookeeper.connectString());
        backends.add(backend);
        return backend;
    }

    @Override
    protected void closeClients() {
        backends.forEach(ZOOKEEPER::dispose);
    }
}
