package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * Acquisitions that block no caller: {@link LockManager#acquireAsync} waits in the same per-key queue
 * as blocking callers and in the store the same way, with futures and timers instead of parked threads.
 */
class AsyncAcquisitionTest extends EngineTestSupport {

    private static LockRequest request(String key, Duration waitTime) {
        return LockRequest.builder(key).waitTime(waitTime).build();
    }

    @Test
    void aFreeKeyIsTakenAndReleasedLikeASynchronousOne() throws Exception {
        LockManager locks = manager();
        LockHandle handle = locks.acquireAsync(request(key, Duration.ZERO)).get(5, TimeUnit.SECONDS);
        assertThat(handle.isHeld()).isTrue();
        assertThat(manager().tryAcquire(key)).as("another owner while held").isEmpty();
        handle.close();
        assertThat(manager().tryAcquire(key)).as("free after release").isPresent();
    }

    @Test
    void aHeldKeyIsAwaitedWithoutBlockingTheCallerAndTakenAfterTheRelease() throws Exception {
        LockManager other = manager();
        LockHandle holder = other.acquire(key, Duration.ZERO);
        CompletableFuture<LockHandle> waiting = manager().acquireAsync(request(key, Duration.ofSeconds(10)));
        assertThat(waiting).as("returned while the key is held").isNotDone();
        long holderToken = holder.fencingToken();
        holder.close();
        LockHandle taken = waiting.get(5, TimeUnit.SECONDS);
        assertThat(taken.fencingToken()).isGreaterThan(holderToken);
        taken.close();
    }

    @Test
    void theWaitRunsOutWithATimeoutAndLeavesNothingBehind() throws Exception {
        LockManager locks = manager();
        try (LockHandle holder = manager().acquire(key, Duration.ZERO)) {
            CompletableFuture<LockHandle> waiting = locks.acquireAsync(request(key, Duration.ofMillis(150)));
            assertThatThrownBy(() -> waiting.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(LockNotAcquiredException.class)
                    .satisfies(e -> assertThat(((LockNotAcquiredException) e).reason()).isEqualTo(LockNotAcquiredException.Reason.TIMEOUT));
        }
        assertThat(locks.tryAcquire(key)).as("the same manager takes the key afterwards").isPresent();
    }

    @Test
    void aCancelledWaitGivesUpAndNeverTakesTheKeyLater() throws Exception {
        LockManager locks = manager();
        LockHandle holder = manager().acquire(key, Duration.ZERO);
        CompletableFuture<LockHandle> storeWaiter = locks.acquireAsync(request(key, Duration.ofSeconds(10)));
        CompletableFuture<LockHandle> queued = locks.acquireAsync(request(key, Duration.ofSeconds(10)));
        queued.cancel(false);
        storeWaiter.cancel(false);
        holder.close();
        LockHandle next = manager().acquire(key, Duration.ofSeconds(5));
        assertThat(next.isHeld()).as("the cancelled acquisitions left the key to others").isTrue();
        next.close();
        // The cancelled acquisitions give their turns back on their own threads, a moment later.
        assertThat(locks.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(5)).build()))
                .as("and the manager that cancelled has no stale turn").isPresent();
    }

    @Test
    void blockingAndAsynchronousWaitersTakeTheirTurnsInArrivalOrder() throws Exception {
        LockManager locks = manager();
        LockHandle holder = locks.acquire(key, Duration.ZERO);
        holder.detachFromThread();
        List<String> order = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> first = locks.acquireAsync(request(key, Duration.ofSeconds(10)))
                .thenAccept(handle -> { order.add("async-1"); handle.close(); });
        await("the first waiter to queue", Duration.ofSeconds(5), () -> !first.isDone());
        Thread blocking = start("blocking", () -> {
            try (LockHandle handle = locks.acquire(key, Duration.ofSeconds(10))) {
                order.add("blocking-2");
            }
        });
        Thread.sleep(100);
        CompletableFuture<Void> third = locks.acquireAsync(request(key, Duration.ofSeconds(10)))
                .thenAccept(handle -> { order.add("async-3"); handle.close(); });
        holder.close();
        first.get(5, TimeUnit.SECONDS);
        blocking.join(5_000);
        third.get(5, TimeUnit.SECONDS);
        assertThat(order).containsExactly("async-1", "blocking-2", "async-3");
    }

    @Test
    void manyAsynchronousCallersOnFewKeysNeverOverlap() throws Exception {
        LockManager locks = manager();
        int keys = 3;
        AtomicInteger[] inside = new AtomicInteger[keys];
        AtomicInteger overlaps = new AtomicInteger();
        for (int k = 0; k < keys; k++) {
            inside[k] = new AtomicInteger();
        }
        List<CompletableFuture<Void>> calls = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            int k = i % keys;
            calls.add(locks.acquireAsync(request(key + ":" + k, Duration.ofSeconds(30))).thenAccept(handle -> {
                try {
                    if (inside[k].incrementAndGet() > 1) {
                        overlaps.incrementAndGet();
                    }
                    Thread.yield();
                    inside[k].decrementAndGet();
                } finally {
                    handle.close();
                }
            }));
        }
        CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        assertThat(overlaps).as("callers inside a key's section at once").hasValue(0);
        assertThat(locks.admin().heldLocks()).isEmpty();
    }

    @Test
    void aThreadThatHoldsTheKeyReentersAtOnce() throws Exception {
        LockManager locks = manager();
        try (LockHandle outer = locks.acquire(key, Duration.ZERO)) {
            CompletableFuture<LockHandle> inner = locks.acquireAsync(request(key, Duration.ZERO));
            assertThat(inner).isDone();
            inner.get().close();
            assertThat(outer.isHeld()).isTrue();
        }
    }

    @Test
    void closingTheManagerFailsAWaitingAcquisition() {
        LockManager locks = manager();
        LockHandle holder = manager().acquire(key, Duration.ZERO);
        CompletableFuture<LockHandle> waiting = locks.acquireAsync(request(key, Duration.ofSeconds(30)));
        locks.close();
        assertThatThrownBy(() -> waiting.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        holder.close();
        assertThat(manager().tryAcquire(key)).isPresent();
    }

    @Test
    void anAsynchronousHandleIsBoundToNoThreadSoAnUnrelatedFlowOnTheSamePoolThreadWaits() throws Exception {
        RecordingBackend backend = tapped();
        AtomicReference<Thread> firstStoreCall = new AtomicReference<>();
        backend.afterAcquire((owner, result) -> firstStoreCall.compareAndSet(null, Thread.currentThread()));
        LockManager locks = manager(backend, b -> { });
        LockHandle first = locks.acquireAsync(request(key, Duration.ZERO)).get(5, TimeUnit.SECONDS);
        Thread poolThread = firstStoreCall.get();
        assertThat(poolThread.getName()).as("the thread that completed the first flow").startsWith("dlock-async-");

        // Unrelated flows on other keys, until one of them runs on the thread that completed the first.
        AtomicReference<Boolean> reentered = new AtomicReference<>();
        for (int flow = 0; flow < 1_000 && reentered.get() == null; flow++) {
            locks.acquireAsync(request(key + ":other-" + flow, Duration.ZERO)).thenApply(other -> {
                if (Thread.currentThread() == poolThread) {
                    Optional<LockHandle> taken = locks.tryAcquire(key);
                    reentered.set(taken.isPresent());
                    taken.ifPresent(LockHandle::close);
                }
                return other;
            }).get(5, TimeUnit.SECONDS).close();
        }
        assertThat(reentered.get()).as("an unrelated flow ran on the first flow's pool thread").isNotNull();
        assertThat(reentered.get()).as("that flow took the first flow's lock as its own").isFalse();
        assertThat(first.isHeld()).isTrue();

        // A caller that wants re-entry binds the lock to its thread itself.
        first.attachToCurrentThread();
        try (LockHandle inner = locks.tryAcquire(key).orElseThrow()) {
            assertThat(inner.fencingToken()).as("the attached thread re-enters").isEqualTo(first.fencingToken());
        }
        first.close();
        assertThat(manager().tryAcquire(key)).as("free after the last release").isPresent();
    }

    @Test
    void fairAsynchronousWaitersOfOneJvmQueueInTheStoreLikeBlockingOnesSoArrivalOrderHoldsAcrossJvms() throws Exception {
        LockRequest fair = LockRequest.builder(key).kind(LockKind.FAIR).waitTime(Duration.ofSeconds(10)).build();
        LockHandle holder = manager().acquire(fair);
        RecordingBackend asyncStore = tapped();
        LockManager asyncJvm = manager(asyncStore, b -> { });
        List<String> order = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> first = asyncJvm.acquireAsync(fair).thenAccept(handle -> { order.add("async-1"); handle.close(); });
        await("the first fair waiter in the store", Duration.ofSeconds(5), () -> asyncStore.acquiringOwners.size() > 0);
        CompletableFuture<Void> second = asyncJvm.acquireAsync(fair).thenAccept(handle -> { order.add("async-2"); handle.close(); });
        // A fair lock keeps arrival order in the store: a local turn would keep the second out of the store's queue.
        await("the second fair waiter in the store while the first waits", Duration.ofSeconds(5),
                () -> Set.copyOf(asyncStore.acquiringOwners).size() == 2);
        RecordingBackend laterStore = tapped();
        LockManager laterJvm = manager(laterStore, b -> { });
        Thread later = start("later-jvm", () -> {
            try (LockHandle handle = laterJvm.acquire(fair)) {
                order.add("later");
            }
        });
        await("the later JVM's waiter in the store", Duration.ofSeconds(5), () -> laterStore.heldAnswers.get() > 0);
        holder.close();
        first.get(5, TimeUnit.SECONDS);
        second.get(5, TimeUnit.SECONDS);
        later.join(5_000);
        assertThat(order).containsExactly("async-1", "async-2", "later");
    }

    @Test
    void aStoreFailureWhileWaitingFailsTheAcquisitionAndGivesTheTurnToTheNextLocalWaiter() throws Exception {
        RecordingBackend backend = tapped();
        AtomicBoolean storeDown = new AtomicBoolean();
        backend.afterAcquire((owner, answer) -> {
            // One failed call: the asynchronous waiter's, the only one asking the store while the other waits its turn.
            if (storeDown.compareAndSet(true, false)) {
                throw new LockBackendException("the store is unreachable (test)", null);
            }
        });
        // A slow release (a loaded machine): the final check must wait for the release, not race it.
        backend.aroundRelease(release -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return release.get();
        });
        LockManager locks = manager(backend, b -> { });
        LockHandle holder = manager().acquire(key, Duration.ZERO);
        CompletableFuture<LockHandle> waiting = locks.acquireAsync(request(key, Duration.ofSeconds(30)));
        await("the asynchronous waiter in the store", Duration.ofSeconds(5), () -> backend.heldAnswers.get() >= 2);
        CompletableFuture<Long> next = new CompletableFuture<>();
        start("next-local-waiter", () -> {
            long token;
            try (LockHandle handle = locks.acquire(key, Duration.ofSeconds(30))) {
                token = handle.fencingToken();
            } catch (RuntimeException e) {
                next.completeExceptionally(e);
                return;
            }
            // Completed once the handle is closed, so that the check below sees the release done.
            next.complete(token);
        });
        await("the blocking waiter to queue behind it", Duration.ofSeconds(5), () -> threadsWaitingForTheTurn() == 1);
        storeDown.set(true);
        assertThatThrownBy(() -> waiting.get(10, TimeUnit.SECONDS)).as("the asynchronous waiter, once the store fails")
                .cause().isInstanceOf(LockBackendException.class);
        holder.close();
        assertThat(next.get(10, TimeUnit.SECONDS)).as("the next local waiter takes the key").isGreaterThan(0L);
        assertFree(manager(), key, "nothing is left held in the store");
    }
}
