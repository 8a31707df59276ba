package dev.dlock.memcached;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.opentest4j.TestAbortedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts one {@link MemcachedServer} before the tests of a class and kills it after them. Where memcached is not
 * installed, each test of the class is skipped with the harness's message (how to install it), so the skips are
 * counted in the build's summary instead of the class silently running no test.
 *
 * <p>Use as {@code @RegisterExtension static final MemcachedServerExtension memcached = new MemcachedServerExtension();}.
 */
public final class MemcachedServerExtension implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {

    private static final Logger log = LoggerFactory.getLogger(MemcachedServerExtension.class);

    private MemcachedServer server;
    private String unavailable;

    /** Starts the server before the first test of the class, or remembers why it cannot. */
    @Override
    public void beforeAll(ExtensionContext context) {
        try {
            server = MemcachedServer.start();
        } catch (TestAbortedException e) {
            unavailable = e.getMessage();
            log.warn("{}: {}", context.getDisplayName(), unavailable);
        }
    }

    /** Skips the test when there is no server. */
    @Override
    public void beforeEach(ExtensionContext context) {
        Assumptions.assumeTrue(server != null, unavailable);
    }

    /** Kills the server after the last test of the class. */
    @Override
    public void afterAll(ExtensionContext context) {
        if (server != null) {
            server.close();
            server = null;
        }
    }

    /** The running server; only valid inside the class's tests. */
    public MemcachedServer server() {
        if (server == null) {
            throw new IllegalStateException("MemcachedServerExtension is not started: register it on a static field");
        }
        return server;
    }
}
