package dev.dlock.redis;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.testkit.OtherJvmHolder;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Who holds a key under Redlock (what a quorum of masters names), seen from another JVM, and a forced release on every master. */
class RedlockHolderInspectionTest {

    private static final TopologyBackendFactory FACTORY = new TopologyBackendFactory();
    private static final List<RedisServerProcess> masters = new ArrayList<>();

    @BeforeAll
    static void startMasters() {
        for (int i = 0; i < 3; i++) {
            masters.add(RedisServerProcess.start());
        }
    }

    @AfterAll
    static void stopMasters() {
        masters.forEach(RedisServerProcess::close);
        masters.clear();
    }

    private static String connection() {
        return TopologyBackendFactory.connection(TopologyBackendFactory.REDLOCK, RedlockContractTest.addresses(masters), null);
    }

    @Test
    void aHolderInAnotherJvmIsNamedAndAForcedReleaseFreesTheKeyAndTellsIt() throws Exception {
        String key = "orders:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(connection());
        try (LockManager locks = LockManager.builder(backend).instanceId("operator").build();
             OtherJvmHolder child = OtherJvmHolder.start(TopologyBackendFactory.class, connection(), key, LockKind.EXCLUSIVE,
                     "worker-7", "checkout-worker-3", Duration.ofSeconds(3))) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();

            List<StoredHolder> stored = inspection.holders(LockKind.EXCLUSIVE, key);

            assertThat(stored).hasSize(1);
            LockHolder holder = LockHolder.of(stored.get(0));
            assertThat(holder.instance()).isEqualTo("worker-7");
            assertThat(holder.holder()).isEqualTo("checkout-worker-3");
            assertThat(holder.acquiredAt()).isBetween(Instant.now().minusSeconds(120), Instant.now().plusSeconds(5));
            assertThat(holder.leaseRemaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(3));

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
    void anOwnerOnAMinorityOfMastersHoldsNothingButIsRemovedByAForcedRelease() {
        String key = "minority:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(connection());
        RedisServerProcess first = masters.get(0);
        try (RedisClient client = RedisClient.create(first.host(), first.port());
             RedisLockBackend oneMaster = RedisLockBackend.builder(client).build()) {
            oneMaster.tryAcquire(LockKind.EXCLUSIVE, key, "leftover", 60_000);
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();

            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).as("one master of three is no quorum").isEmpty();
            assertThat(inspection.forceRelease(LockKind.EXCLUSIVE, key)).extracting(StoredHolder::owner).containsExactly("leftover");
            assertThat(oneMaster.capabilities().holderInspection().orElseThrow().holders(LockKind.EXCLUSIVE, key)).isEmpty();
        } finally {
            FACTORY.dispose(backend);
        }
    }
}
