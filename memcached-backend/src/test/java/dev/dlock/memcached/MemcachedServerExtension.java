package dev.dlock.memcached;

import dev.dlock.testkit.ServerExtension;

/**
 * Starts one {@link MemcachedServer} before the tests of a class and kills it after them; where memcached is not
 * installed, each test of the class is skipped with the harness's message (how to install it).
 *
 * <p>Use as {@code @RegisterExtension static final MemcachedServerExtension memcached = new MemcachedServerExtension();}.
 */
public final class MemcachedServerExtension extends ServerExtension<MemcachedServer> {

    /** A memcached with the harness's default memory. */
    public MemcachedServerExtension() {
        super("memcached server", MemcachedServer::start);
    }
}
