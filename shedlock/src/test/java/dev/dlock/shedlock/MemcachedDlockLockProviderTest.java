package dev.dlock.shedlock;

import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.memcached.MemcachedBackendFactory;
import dev.dlock.memcached.MemcachedServerExtension;

/**
 * The provider's contract on a real memcached (ShedLock has a memcached provider of its own, whose users come from
 * there); every instance has connections of its own. memcached issues no fencing tokens: the tests that compare them
 * compare none here.
 */
class MemcachedDlockLockProviderTest extends DlockLockProviderContract {

    private static final MemcachedBackendFactory MEMCACHED = new MemcachedBackendFactory();

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();

    @Override
    protected LockBackend newBackend() {
        return MEMCACHED.create(memcached.server().address());
    }

    @Override
    protected void dispose(LockBackend backend) {
        MEMCACHED.dispose(backend);
    }
}
