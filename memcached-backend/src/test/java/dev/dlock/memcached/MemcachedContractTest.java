package dev.dlock.memcached;

import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;

/**
 * The published contract, crashes included, against a memcached started for this class. The store issues no
 * fencing tokens, so the suite checks that every handle refuses to give one instead.
 */
class MemcachedContractTest extends StoreFailureContractTest {

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();

    @Override
    protected BackendFactory factory() {
        return new MemcachedBackendFactory();
    }

    @Override
    protected String connection() {
        return memcached.server().address();
    }

    @Override
    protected void deleteKey(String key) {
        memcached.server().delete(new MemcachedKeys(MemcachedLockBackend.DEFAULT_KEY_PREFIX).lock(key));
    }

    @Override
    protected void wipeStore() {
        memcached.server().flushAll();
    }

    /** Every lock command the server ran: reads (mg), writes (ms), deletes (md), touches. */
    @Override
    protected long storeCommandCount() {
        return memcached.server().stat("cmd_get") + memcached.server().stat("cmd_set") + memcached.server().stat("cmd_touch")
                + memcached.server().stat("delete_hits") + memcached.server().stat("delete_misses");
    }

    @Override
    protected void crashStore() {
        memcached.server().kill();
    }

    @Override
    protected void restartStore() {
        memcached.server().restart();
    }
}
