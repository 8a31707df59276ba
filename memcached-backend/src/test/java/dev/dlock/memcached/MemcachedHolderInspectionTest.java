package dev.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.testkit.OtherJvmHolder;

/** Who holds a key in memcached, seen from another JVM than the holder's, and an operator's forced release. */
class MemcachedHolderInspectionTest {

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();

    private MemcachedLockBackend backend() {
        return MemcachedLockBackend.builder(memcached.server().address()).timeout(Duration.ofSeconds(1)).build();
    }

    @Test
    void aHolderInAnotherJvmIsNamedAndAForcedReleaseFreesTheKeyAndTellsIt() throws Exception {
        String key = "orders:" + UUID.randomUUID();
        try (MemcachedLockBackend backend = backend();
             LockManager locks = LockManager.builder(backend).instanceId("operator").build();
             OtherJvmHolder child = OtherJvmHolder.start(MemcachedBackendFactory.class, memcached.server().address(), key,
                     LockKind.EXCLUSIVE, "worker-7", "checkout-worker-3", Duration.ofSeconds(3))) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();

            List<StoredHolder> stored = inspection.holders(LockKind.EXCLUSIVE, key);

            assertThat(stored).hasSize(1);
            LockHolder holder = LockHolder.of(stored.get(0));
            assertThat(holder.instance()).isEqualTo("worker-7");
            assertThat(holder.holder()).isEqualTo("checkout-worker-3");
            assertThat(holder.acquiredAt()).isBetween(Instant.now().minusSeconds(120), Instant.now().plusSeconds(5));
            // Whole seconds, rounded up, plus the two memcached's late clock may take: a 3 s lease is stored for 5 s.
            assertThat(holder.leaseRemaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(5));

            CompletableFuture<Boolean> waiter = CompletableFuture.supplyAsync(() -> {
                try (LockHandle handle = locks.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build())) {
                    return handle.isHeld();
                }
            });
            List<StoredHolder> removed = inspection.forceRelease(LockKind.EXCLUSIVE, key);

            assertThat(removed).extracting(StoredHolder::owner).containsExactly(stored.get(0).owner());
            assertThat(waiter.get(60, TimeUnit.SECONDS)).as("the waiter got the key").isTrue();
            assertThat(child.awaitExit(Duration.ofSeconds(60))).as("the child's exit code (42: told its lease was lost); its output:\n%s",
                    child.output()).isEqualTo(OtherJvmHolder.EXIT_LEASE_LOST);
        }
    }

    @Test
    void aForcedOutHolderIsNeverToldItReleasedCleanly() {
        String key = "forced:" + UUID.randomUUID();
        try (MemcachedLockBackend backend = backend()) {
            backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", 10_000);

            assertThat(backend.capabilities().holderInspection().orElseThrow().forceRelease(LockKind.EXCLUSIVE, key))
                    .extracting(StoredHolder::owner).containsExactly("holder");

            // Without the owner record gone, the release would read "nobody took it since": ALREADY_FREE.
            assertThat(backend.release(LockKind.EXCLUSIVE, key, "holder", 0)).isEqualTo(ReleaseResult.NOT_OWNER);
        }
    }

    @Test
    void holdersOfAFreeKeyAreNoneAndReadingThemExtendsNoLease() throws Exception {
        String key = "read-only:" + UUID.randomUUID();
        try (MemcachedLockBackend backend = backend()) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();
            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).isEmpty();
            assertThat(inspection.forceRelease(LockKind.EXCLUSIVE, key)).isEmpty();

            backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", 2_000);
            long first = inspection.holders(LockKind.EXCLUSIVE, key).get(0).remainingTtlMillis();
            // Read until memcached's whole-second clock ticks: a read that extended the item would keep it where it was.
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            long later = first;
            while (later == first && System.nanoTime() < end) {
                TimeUnit.MILLISECONDS.sleep(50);
                List<StoredHolder> holders = inspection.holders(LockKind.EXCLUSIVE, key);
                later = holders.isEmpty() ? 0 : holders.get(0).remainingTtlMillis();
            }
            assertThat(later).as("the remaining lease, read again and again").isLessThan(first);
        }
    }
}
