package dev.dlock.integration;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;

/** The registry's Lock contract on the in-memory store: two lock managers over one store stand for two JVMs. */
class InMemoryLockRegistryTest extends LockRegistryContract {

    private final InMemoryLockBackend store = new InMemoryLockBackend();

    @Override
    protected LockBackend newBackend() {
        return store;
    }
}
