package dev.dlock.testkit.redis;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Starts one {@link RedisServerProcess} before the tests of a class and closes it after them.
 *
 * <p>Use as {@code @RegisterExtension static final RedisServerExtension redis = new RedisServerExtension();}.
 */
public final class RedisServerExtension implements BeforeAllCallback, AfterAllCallback {

    private RedisServerProcess server;

    /** Starts the server before the first test of the class. */
    @Override
    public void beforeAll(ExtensionContext context) {
        server = RedisServerProcess.start();
    }

    /** Kills the server and deletes its directory after the last test of the class. */
    @Override
    public void afterAll(ExtensionContext context) {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** The running server; only valid between beforeAll and afterAll. */
    public RedisServerProcess server() {
        if (server == null) {
            throw new IllegalStateException("RedisServerExtension is not started: register it on a static field");
        }
        return server;
    }
}
