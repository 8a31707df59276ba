package dev.dlock.memcached;

import java.time.Duration;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.BackendFactory;

/** Connects a {@link MemcachedLockBackend} with connections of its own to {@code host:port[,host:port...]}; a 1 s timeout. */
public class MemcachedBackendFactory implements BackendFactory {

    @Override
    public LockBackend create(String connection) {
        return MemcachedLockBackend.builder(connection).timeout(Duration.ofSeconds(1)).build();
    }

    @Override
    public void dispose(LockBackend backend) {
        backend.close();
    }
}
