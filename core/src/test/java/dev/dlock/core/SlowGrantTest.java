package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.AcquireResult;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

/**
 * A grant whose reply arrives after the lease could have run out in the store (a reply delayed by the
 * network, a paused client) is no lock: another owner may have taken the key meanwhile. The fault
 * suite caught dlock handing such a grant to the caller, who then ran its section beside the next
 * holder. The engine now confirms it with one owner-checked renewal, and gives it back and asks again when the
 * store no longer holds it.
 */
class SlowGrantTest extends EngineTestSupport {

    private RecordingBackend slowFirstReply(long replyDelayMillis) {
        RecordingBackend backend = tapped();
        AtomicInteger slowReplies = new AtomicInteger(1);
        backend.afterAcquire((owner, result) -> {
            if (result instanceof AcquireResult.Acquired && slowReplies.getAndDecrement() > 0) {
                try {
                    Thread.sleep(replyDelayMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        return backend;
    }

    @Test
    void aWatchdogGrantArrivingAfterItsLeaseIsGivenBackAndAskedAgain() {
        RecordingBackend backend = slowFirstReply(150);
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(60)));
        try (LockHandle lock = locks.acquire(key, Duration.ofSeconds(5))) {
            assertThat(lock.isHeld()).as("the lock handed out is held").isTrue();
            assertThat(backend.acquires).as("store acquisitions").hasValue(2);
        }
    }

    @Test
    void aFixedLeaseGrantArrivingAfterItsLeaseIsGivenBackAndAskedAgain() {
        RecordingBackend backend = slowFirstReply(150);
        LockManager locks = manager(backend, b -> { });
        try (LockHandle lock = locks.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(5))
                .leaseTime(Duration.ofMillis(100)).build())) {
            assertThat(lock.isHeld()).isTrue();
            assertThat(backend.acquires).hasValue(2);
        }
    }

    /**
     * A grant given back is asked for again under a new owner token: a store may tell a repeated release by the owner
     * that released (Redis records it), and the next lease of a reused owner would pass for the one given back, its
     * loss for a repeated release.
     */
    @Test
    void aGrantGivenBackIsAskedForAgainUnderANewOwnerToken() {
        RecordingBackend backend = slowFirstReply(150);
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(60)));
        try (LockHandle lock = locks.acquire(key, Duration.ofSeconds(5))) {
            assertThat(lock.isHeld()).isTrue();
            assertThat(backend.acquiringOwners).as("the owners of the two store acquisitions").hasSize(2).doesNotHaveDuplicates();
        }
    }

    @Test
    void anAsynchronousGrantArrivingAfterItsLeaseIsGivenBackToo() throws Exception {
        RecordingBackend backend = slowFirstReply(150);
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(60)));
        LockHandle lock = locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(5)).build()).get(10, TimeUnit.SECONDS);
        assertThat(lock.isHeld()).isTrue();
        assertThat(backend.acquires).hasValue(2);
        lock.close();
    }

    @Test
    void whenEveryReplyIsTooSlowTheWaitEndsWithATimeout() {
        RecordingBackend backend = tapped();
        backend.afterAcquire((owner, result) -> {
            try {
                Thread.sleep(80);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(40)));
        assertThat(locks.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofMillis(300)).build())).isEmpty();
        assertThat(manager().tryAcquire(key)).as("every slow grant was given back").isPresent();
    }

    /**
     * A fair waiter's grant whose reply came late, while the store still holds the key for it (the store's lease
     * runs from its own grant, here on a clock that stands still): the waiter keeps its turn. Giving the grant back
     * would pass the key to the waiter behind it and send this one to the tail of the queue.
     */
    @Test
    void aFairWaiterWhoseLateGrantTheStoreStillHoldsKeepsItsTurn() throws Exception {
        AtomicLong storeClock = new AtomicLong();
        InMemoryLockBackend shared = InMemoryLockBackend.builder().clock(storeClock::get).build();
        RecordingBackend first = withoutHandOff(shared);
        AtomicBoolean nextGrantSlow = new AtomicBoolean(true);
        first.afterAcquire((owner, result) -> {
            if (result instanceof AcquireResult.Acquired && nextGrantSlow.getAndSet(false)) {
                sleep(150);
            }
        });
        RecordingBackend second = withoutHandOff(shared);
        LockManager holderJvm = manager(shared, b -> { });
        LockManager firstJvm = manager(first, b -> b.leaseTime(Duration.ofMillis(60)));
        LockManager secondJvm = manager(second, b -> { });
        LockRequest fair = LockRequest.builder(key).kind(LockKind.FAIR).waitTime(Duration.ofSeconds(10)).build();
        LockHandle holder = holderJvm.acquire(fair);
        List<String> order = new CopyOnWriteArrayList<>();
        Thread firstWaiter = start("first-fair-waiter", () -> takeInTurn(firstJvm, fair, "first", order));
        await("the first waiter to queue in the store", Duration.ofSeconds(10), () -> first.heldAnswers.get() > 0);
        Thread secondWaiter = start("second-fair-waiter", () -> takeInTurn(secondJvm, fair, "second", order));
        await("the second waiter to queue in the store", Duration.ofSeconds(10), () -> second.heldAnswers.get() > 0);

        holder.close();
        firstWaiter.join(15_000);
        secondWaiter.join(15_000);
        assertThat(order).as("the order the fair waiters held the key in").containsExactly("first", "second");
    }

    private static void takeInTurn(LockManager locks, LockRequest request, String who, List<String> order) {
        try (LockHandle ignored = locks.acquire(request)) {
            order.add(who);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
