package dev.dlock.integration;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.memcached.MemcachedBackendFactory;
import dev.dlock.memcached.MemcachedServerExtension;

/**
 * The registry's Lock contract on a real memcached; each manager has connections of its own, as two JVMs would.
 * memcached issues no fencing tokens: the contract's token comparisons are left out here.
 */
class MemcachedLockRegistryTest extends LockRegistryContract {

    private static final MemcachedBackendFactory MEMCACHED = new MemcachedBackendFactory();

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();
    private final List<LockBackend> backends = new ArrayList<>();

    @Override
    protected LockBackend newBackend() {
        LockBackend backend = MEMCACHED.create(memcached.server().address());
        backends.add(backend);
        return backend;
    }

    @Override
    protected void closeClients() {
        backends.forEach(MEMCACHED::dispose);
    }
}
