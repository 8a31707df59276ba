package dev.dlock.core;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.AcquireResult;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Who holds a key across instances (two managers with their own instance ids over one store stand for two JVMs),
 * and an operator's forced release: the holder learns its lease is lost, a waiter gets the key with a larger token.
 */
class HoldersAndForcedReleaseTest extends EngineTestSupport {

    /** Records lost leases and forced releases. */
    private static final class Events implements LockListener {
        final List<String> lostReasons = new CopyOnWriteArrayList<>();
        final List<String> forced = new CopyOnWriteArrayList<>();

        @Override
        public void onLeaseLost(String lockName, String key, String reason) {
            lostReasons.add(reason);
        }

        @Override
        public void onForcedRelease(String lockName, String key, List<LockHolder> holders) {
            forced.add(lockName + " " + key + " " + holders.stream().map(h -> h.instance() + "/" + h.holder()).toList());
        }
    }

    private LockHandle acquireOn(String threadName, LockManager locks, LockRequest request) throws InterruptedException {
        AtomicReference<LockHandle> handle = new AtomicReference<>();
        Thread thread = new Thread(() -> handle.set(locks.acquire(request)), threadName);
        thread.start();
        thread.join(10_000);
        assertThat(handle.get()).as("%s took %s", threadName, request.key()).isNotNull();
        return handle.get();
    }

    @Test
    void anotherInstanceSeesWhichInstanceAndThreadHoldTheKey() throws InterruptedException {
        LockManager appA = manager(store, b -> b.instanceId("app-a"));
        LockManager appB = manager(store, b -> b.instanceId("app-b"));
        Instant before = Instant.now().minusMillis(1);
        LockHandle held = acquireOn("order-worker-1", appA, LockRequest.builder(key).build());

        List<LockHolder> holders = appB.admin().holders(key);

        assertThat(holders).singleElement().satisfies(holder -> {
            assertThat(holder.instance()).isEqualTo("app-a");
            assertThat(holder.holder()).isEqualTo("order-worker-1");
            assertThat(holder.acquiredAt()).isBetween(before, Instant.now().plusMillis(1));
            assertThat(holder.leaseRemaining()).isPositive().isLessThanOrEqualTo(LockManager.DEFAULT_LEASE_TIME);
        });
        assertThat(appB.admin().holders(LockKind.READ, key)).as("another kind's lock on the key is free").isEmpty();
        held.close();
        assertThat(appB.admin().holders(key)).as("free after release").isEmpty();
    }

    @Test
    void anAsynchronousAcquisitionIsNamedAfterTheThreadThatAskedNotDlocksOwn() throws Exception {
        LockManager locks = manager(store, b -> b.instanceId("app-a"));
        LockManager other = manager();
        // Held elsewhere first, so that the asynchronous acquisition draws its token on a dlock thread after a wait.
        LockHandle blocker = other.acquire(key, Duration.ZERO);
        AtomicReference<CompletableFuture<LockHandle>> pending = new AtomicReference<>();
        Thread caller = new Thread(() -> pending.set(locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(10)).build())),
                "checkout-caller");
        caller.start();
        caller.join(10_000);
        blocker.close();
        LockHandle handle = pending.get().get(10, TimeUnit.SECONDS);

        assertThat(other.admin().holders(key)).singleElement().satisfies(holder -> {
            assertThat(holder.instance()).isEqualTo("app-a");
            assertThat(holder.holder()).isEqualTo("async:checkout-caller");
        });
        handle.close();
    }

    @Test
    void aForcedReleaseFromAnotherInstanceIsReportedLostToTheHolderAndTheWaiterGetsALargerToken() throws Exception {
        Events holderEvents = new Events();
        Events operatorEvents = new Events();
        LockManager appA = manager(store, b -> b.instanceId("app-a").leaseTime(Duration.ofMillis(300)).listener(holderEvents));
        LockManager appB = manager(store, b -> b.instanceId("app-b").listener(operatorEvents));
        String logical = "orders:" + key;
        LockHandle stuck = acquireOn("stuck-worker", appA, LockRequest.builder(logical).name("orders").build());
        long stuckToken = stuck.fencingToken();
        CompletableFuture<LockHandle> waiter = appB.acquireAsync(LockRequest.builder(logical).name("orders")
                .waitTime(Duration.ofSeconds(30)).build());
        assertThat(waiter).as("the key is held").isNotDone();

        List<LockHolder> removed = appB.admin().forceRelease("orders", logical);

        assertThat(removed).singleElement().satisfies(holder -> {
            assertThat(holder.instance()).isEqualTo("app-a");
            assertThat(holder.holder()).isEqualTo("stuck-worker");
        });
        assertThat(operatorEvents.forced).containsExactly("orders " + logical + " [app-a/stuck-worker]");
        LockHandle next = waiter.get(10, TimeUnit.SECONDS);
        assertThat(next.fencingToken()).as("the next holder's token").isGreaterThan(stuckToken);
        await("the holder told at its next renewal", Duration.ofSeconds(5), () -> !holderEvents.lostReasons.isEmpty());
        assertThat(holderEvents.lostReasons).singleElement().asString().contains("taken by a forced release");
        assertThat(stuck.state()).isEqualTo(LockState.LOST);
        assertThat(stuck.isHeld()).isFalse();
        assertThatThrownBy(stuck::close).isInstanceOf(LockLostException.class).hasMessageContaining("taken by a forced release");
        assertThat(appA.admin().holders(logical)).as("the new holder, not the removed one")
                .singleElement().extracting(LockHolder::instance).isEqualTo("app-b");
        next.close();
    }

    @Test
    void aForcedReleaseFreesEveryReaderAndPermitAndAFixedLeaseLearnsItAtRelease() throws InterruptedException {
        LockManager appA = manager(store, b -> b.instanceId("app-a"));
        LockManager appB = manager(store, b -> b.instanceId("app-b"));
        LockHandle reader1 = acquireOn("reader-1", appA, LockRequest.builder(key).kind(LockKind.READ).build());
        LockHandle reader2 = acquireOn("reader-2", appA, LockRequest.builder(key).kind(LockKind.READ)
                .leaseTime(Duration.ofSeconds(20)).build());
        LockHandle permit = acquireOn("permit-1", appA, LockRequest.builder(key).kind(LockKind.permits(3)).build());
        assertThat(appB.admin().holders(key)).extracting(LockHolder::holder).containsExactlyInAnyOrder("reader-1", "reader-2", "permit-1");
        assertThat(appB.admin().holders(LockKind.WRITE, key)).isEmpty();
        assertThat(appB.tryAcquire(LockRequest.builder(key).kind(LockKind.WRITE).waitTime(Duration.ZERO).build()))
                .as("readers keep a writer out").isEmpty();

        assertThat(appB.admin().forceRelease(key)).extracting(LockHolder::holder)
                .containsExactlyInAnyOrder("reader-1", "reader-2", "permit-1");

        assertThat(appB.admin().holders(key)).isEmpty();
        LockHandle writer = appB.acquire(LockRequest.builder(key).kind(LockKind.WRITE).waitTime(Duration.ZERO).build());
        assertThat(writer.fencingToken()).isGreaterThan(Math.max(reader1.fencingToken(), reader2.fencingToken()));
        assertThatThrownBy(reader2::close).as("the fixed lease has no renewal: its release says it")
                .isInstanceOf(LockLostException.class).hasMessageContaining("taken by a forced release");
        writer.close();
        assertThatThrownBy(reader1::close).isInstanceOf(LockLostException.class);
        assertThatThrownBy(permit::close).isInstanceOf(LockLostException.class);
    }

    @Test
    void withoutTheStoresInspectionHoldersAreThisJvmsOwnAndAForcedReleaseIsRefused() throws InterruptedException {
        LockBackend backend = new StoreThatCannotSayWhoHolds(store);
        assertThat(backend.capabilities().holderInspection()).isEmpty();
        LockManager locks = manager(backend, b -> b.instanceId("app-a"));
        LockHandle held = acquireOn("local-worker", locks, LockRequest.builder(key).build());

        assertThat(locks.admin().holders(key)).singleElement().satisfies(holder -> {
            assertThat(holder.instance()).isEqualTo("app-a");
            assertThat(holder.holder()).isEqualTo("local-worker");
            assertThat(holder.leaseRemaining()).isPositive();
        });
        assertThat(manager(backend, b -> { }).admin().holders(key)).as("another manager's holds are not seen").isEmpty();
        assertThatThrownBy(() -> locks.admin().forceRelease(key)).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("StoreThatCannotSayWhoHolds").hasMessageContaining(key);
        assertThat(held.isHeld()).isTrue();
        held.close();
    }

    /** A store that cannot say who holds a key: everything but {@code holderInspection()} goes to the store it wraps. */
    private static final class StoreThatCannotSayWhoHolds implements LockBackend {
        private final LockBackend store;

        StoreThatCannotSayWhoHolds(LockBackend store) {
            this.store = store;
        }

        @Override
        public BackendCapabilities capabilities() {
            return store.capabilities().withHolderInspection(null);
        }

        @Override
        public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
            return store.tryAcquire(kind, key, owner, leaseMillis);
        }

        @Override
        public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
            return store.release(kind, key, owner, fencingToken);
        }

        @Override
        public void withdraw(LockKind kind, String key, String owner) {
            store.withdraw(kind, key, owner);
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            return store.renew(batch);
        }

        @Override
        public long ping() {
            return store.ping();
        }
    }
}
