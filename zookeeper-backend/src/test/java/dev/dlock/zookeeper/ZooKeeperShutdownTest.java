package dev.dlock.zookeeper;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import dev.dlock.core.spi.LockBackend;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Closing a lock manager frees its keys on ZooKeeper, whose leases live as long as the client's session: without it, a
 * closed manager whose client stays open keeps its keys for good.
 */
class ZooKeeperShutdownTest {

    private static final ZooKeeperBackendFactory FACTORY = new ZooKeeperBackendFactory();

    private static ZooKeeperTestServer zookeeper;

    @BeforeAll
    static void startZooKeeper() {
        zookeeper = ZooKeeperTestServer.start();
    }

    @AfterAll
    static void stopZooKeeper() {
        if (zookeeper != null) {
            zookeeper.close();
        }
    }

    @Test
    void aLeaseHeldAtCloseIsReleasedAndAnotherSessionTakesTheKeyAtOnce() throws Exception {
        String key = "shutdown:" + UUID.randomUUID();
        LockBackend closingStore = FACTORY.create(zookeeper.connectString());
        LockBackend otherStore = FACTORY.create(zookeeper.connectString());
        try (LockManager other = LockManager.builder(otherStore).build()) {
            LockManager closing = LockManager.builder(closingStore).shutdownGracePeriod(Duration.ofMillis(100)).build();
            CompletableFuture<LockHandle> taken = new CompletableFuture<>();
            Thread holder = new Thread(() -> taken.complete(closing.acquire(key, Duration.ofSeconds(10))), "holder");
            holder.start();
            holder.join(30_000);
            LockHandle held = taken.get(10, TimeUnit.SECONDS);
            assertThat(other.tryAcquire(key)).as("another session while the key is held").isEmpty();

            closing.close();

            Optional<LockHandle> next = other.tryAcquire(key);
            assertThat(next).as("another session right after close(), the first session still open").isPresent();
            next.get().close();
            assertThat(held.state()).isEqualTo(LockState.LOST);
            assertThatThrownBy(held::close).isInstanceOf(LockLostException.class).hasMessageContaining(key)
                    .hasMessageContaining("lock manager was closed");
        } finally {
            FACTORY.dispose(closingStore);
            FACTORY.dispose(otherStore);
        }
    }
}
