package dev.dlock.zookeeper;

import dev.dlock.testkit.ServerExtension;

/**
 * A {@link ZooKeeperTestServer} for one test class, registered as a static {@code @RegisterExtension} field: started
 * before its first test, stopped after its last (also when a test failed).
 */
public final class ZooKeeperServerExtension extends ServerExtension<ZooKeeperTestServer> {

    /** An in-process server on a free loopback port. */
    public ZooKeeperServerExtension() {
        super("ZooKeeper server", ZooKeeperTestServer::start);
    }

    /** The running server's connect string. */
    public String connectString() {
        return server().connectString();
    }
}
