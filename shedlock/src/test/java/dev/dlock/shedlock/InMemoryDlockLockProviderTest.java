package dev.dlock.shedlock;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;

/** The provider's contract on the in-memory store: every "instance" is a manager of its own over one shared store. */
class InMemoryDlockLockProviderTest extends DlockLockProviderContract {

    private final InMemoryLockBackend store = new InMemoryLockBackend();

    @Override
    protected LockBackend newBackend() {
        return store;
    }

    @Override
    protected void dispose(LockBackend backend) {
        backend.close();
    }
}
