package dev.dlock.zookeeper;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.testkit.OtherJvmHolder;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Who holds a key in ZooKeeper, seen from another JVM than the holder's, and an operator's forced release. */
class ZooKeeperHolderInspectionTest {

    private static final ZooKeeperBackendFactory FACTORY = new ZooKeeperBackendFactory();

    private static ZooKeeperTestServer zookeeper;
    private static CuratorFramework admin;

    @BeforeAll
    static void startZooKeeper() {
        zookeeper = ZooKeeperTestServer.start();
        admin = ZooKeeperBackendFactory.client(zookeeper.connectString(), 5);
    }

    @AfterAll
    static void stopZooKeeper() {
        if (admin != null) {
            admin.close();
        }
        if (zookeeper != null) {
            zookeeper.close();
        }
    }

    @Test
    void aHolderInAnotherJvmIsNamedAndAForcedReleaseFreesTheKeyAndTellsIt() throws Exception {
        String key = "orders:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(zookeeper.connectString());
        try (LockManager locks = LockManager.builder(backend).instanceId("operator").build();
             OtherJvmHolder child = OtherJvmHolder.start(ZooKeeperBackendFactory.class, zookeeper.connectString(), key,
                     LockKind.EXCLUSIVE, "worker-7", "checkout-worker-3", Duration.ofSeconds(3))) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();

            List<StoredHolder> stored = inspection.holders(LockKind.EXCLUSIVE, key);

            assertThat(stored).hasSize(1);
            LockHolder holder = LockHolder.of(stored.get(0));
            assertThat(holder.instance()).isEqualTo("worker-7");
            assertThat(holder.holder()).isEqualTo("checkout-worker-3");
            assertThat(holder.acquiredAt()).isBetween(Instant.now().minusSeconds(120), Instant.now().plusSeconds(5));
            assertThat(holder.leaseRemaining()).as("kept by the holder's session").isNull();

            // A waiter of this JVM, queued behind the holder's node and watching it.
            CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
                try (LockHandle handle = locks.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build())) {
                    return handle.fencingToken();
                }
            });
            List<StoredHolder> removed = inspection.forceRelease(LockKind.EXCLUSIVE, key);

            assertThat(removed).extracting(StoredHolder::owner).containsExactly(stored.get(0).owner());
            assertThat(waiter.get(60, TimeUnit.SECONDS)).as("the waiter's token").isGreaterThan(child.fencingToken());
            assertThat(child.awaitExit(Duration.ofSeconds(60))).as("the child's exit code (42: told its lease was lost); its output:\n%s",
                    child.output()).isEqualTo(OtherJvmHolder.EXIT_LEASE_LOST);
        } finally {
            FACTORY.dispose(backend);
        }
    }

    @Test
    void holdersOfAFreeKeyAreNoneAndReadingThemChangesNoNode() throws Exception {
        String key = "read-only:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(zookeeper.connectString());
        try (LockManager locks = LockManager.builder(backend).build()) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();
            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).isEmpty();
            assertThat(inspection.forceRelease(LockKind.EXCLUSIVE, key)).isEmpty();

            try (LockHandle handle = locks.acquire(key, Duration.ofSeconds(5))) {
                String keyPath = ZooKeeperLockBackend.keyPath(ZooKeeperLockBackend.DEFAULT_BASE_PATH, key);
                String node = keyPath + "/" + admin.getChildren().forPath(keyPath).get(0);
                Stat before = admin.checkExists().forPath(node);

                assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).singleElement()
                        .satisfies(h -> assertThat(h.remainingTtlMillis()).isEqualTo(StoredHolder.NO_EXPIRY))
                        .satisfies(h -> assertThat(LockHolder.of(h).holder()).isEqualTo(Thread.currentThread().getName()));
                assertThat(admin.checkExists().forPath(node).getMzxid()).as("the node's last write").isEqualTo(before.getMzxid());
                assertThat(handle.isHeld()).isTrue();
            }
            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).isEmpty();
        } finally {
            FACTORY.dispose(backend);
        }
    }
}
