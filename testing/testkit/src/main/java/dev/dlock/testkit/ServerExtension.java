package dev.dlock.testkit;

import java.util.function.Supplier;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.opentest4j.TestAbortedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A store's server for the tests of one class, registered on a static {@code @RegisterExtension} field: started before
 * the class's first test (and its {@code @BeforeAll} methods), closed after its last, also when a test failed.
 *
 * <p>A server that cannot run on this machine (its starter aborts with an assumption, saying how to install it) skips
 * every test of the class with that message, so the skips are counted in the build's summary instead of the class
 * silently running nothing. Any other failure to start fails the class.
 *
 * @param <S> the server, closed (process killed, files deleted) by its {@code close()}
 */
public class ServerExtension<S extends AutoCloseable> implements BeforeAllCallback, BeforeEachCallback, AfterAllCallback {

    private static final Logger log = LoggerFactory.getLogger(ServerExtension.class);

    private final String name;
    private final Supplier<? extends S> starter;
    private S server;
    private String unavailable;

    /**
     * @param name what the server is, for messages ("memcached server")
     * @param starter starts a server on free loopback ports and returns once it answers
     */
    public ServerExtension(String name, Supplier<? extends S> starter) {
        this.name = name;
        this.starter = starter;
    }

    /** Starts the server, or remembers why this machine cannot run one. */
    @Override
    public void beforeAll(ExtensionContext context) {
        try {
            server = starter.get();
        } catch (TestAbortedException e) {
            unavailable = e.getMessage();
            log.warn("{}: no {} here, its tests are skipped: {}", context.getDisplayName(), name, unavailable);
        }
    }

    /** Skips the test when there is no server. */
    @Override
    public void beforeEach(ExtensionContext context) {
        Assumptions.assumeTrue(server != null, () -> unavailable);
    }

    /** Closes the server after the class's last test. */
    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        S running = server;
        server = null;
        if (running != null) {
            running.close();
        }
    }

    /** The running server. */
    public S server() {
        S running = server;
        if (running == null) {
            throw new IllegalStateException("the " + name + " runs only between the first and the last test of a class that "
                    + "registers this extension on a static field" + (unavailable == null ? "" : "; it did not start: " + unavailable));
        }
        return running;
    }
}
