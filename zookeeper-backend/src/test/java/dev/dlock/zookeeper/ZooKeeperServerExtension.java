package dev.dlock.zookeeper;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link ZooKeeperTestServer} for one test class, registered as a static {@code @RegisterExtension} field: started
 * before its first test, stopped after its last (also when a test failed).
 */
public final class ZooKeeperServerExtension implements BeforeAllCallback, AfterAllCallback {

    private ZooKeeperTestServer server;

    @Override
    public void beforeAll(ExtensionContext context) {
        server = ZooKeeperTestServer.start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** The running server's connect string. */
    public String connectString() {
        if (server == null) {
            throw new IllegalStateException("the ZooKeeper server runs only between the test class's first and last test");
        }
        return server.connectString();
    }
}
