package dev.dlock.testkit;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;

import java.time.Duration;

/** The lock kinds' contract against {@link InMemoryLockBackend}: every manager of a test is a client of one store. */
class InMemoryLockKindsContractTest extends LockKindsContractTest {

    private static final Duration WAITER_TIMEOUT = Duration.ofMillis(900);
    private static final InMemoryLockBackend STORE = InMemoryLockBackend.builder().fairWaiterTimeout(WAITER_TIMEOUT).build();

    @Override
    protected BackendFactory factory() {
        return new SharedStore();
    }

    @Override
    protected String connection() {
        return "in-memory";
    }

    @Override
    protected Duration fairWaiterTimeout() {
        return WAITER_TIMEOUT;
    }

    /** Hands out the one store; disposing leaves it to the other managers. */
    public static final class SharedStore implements BackendFactory {

        @Override
        public LockBackend create(String connection) {
            return STORE;
        }

        @Override
        public void dispose(LockBackend backend) {
        }
    }
}
