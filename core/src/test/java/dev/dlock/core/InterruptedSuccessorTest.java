package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.spi.AcquireResult;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

/**
 * A release that passes the key to the next local waiter picks that waiter first, then passes the key in the store.
 * Here a real interrupt from another thread reaches the picked waiter while that store call is in flight (held on a
 * latch): whatever the waiter does with it, the key must end up with a holder or free, never kept in the store for
 * nobody, and the waiter queued behind must get its turn.
 */
class InterruptedSuccessorTest extends EngineTestSupport {

    @Test
    void aWaiterInterruptedWhileTheKeyPassesToItLeavesTheKeyFreeAndTheNextWaiterGetsIt() throws Exception {
        RecordingBackend backend = new RecordingBackend(store);
        CountDownLatch handOffInFlight = new CountDownLatch(1);
        CountDownLatch finishHandOff = new CountDownLatch(1);
        backend.aroundHandOff(handOff -> {
            handOffInFlight.countDown();
            awaitQuietly(finishHandOff);
            return handOff.get();
        });
        LockManager locks = manager(backend, b -> b.localHandOff(true));
        LockRequest fixed = LockRequest.builder(key).leaseTime(Duration.ofSeconds(30)).waitTime(Duration.ofSeconds(5)).build();

        LockHandle holder = locks.acquire(fixed);
        CompletableFuture<String> picked = new CompletableFuture<>();
        Thread pickedThread = start("picked", () -> picked.complete(outcome(locks, fixed)));
        await("the first waiter queued", Duration.ofSeconds(10), () -> waitsForTheTurn(pickedThread));
        CompletableFuture<String> next = new CompletableFuture<>();
        Thread nextThread = start("next", () -> next.complete(outcome(locks, fixed)));
        await("the second waiter queued", Duration.ofSeconds(10), () -> waitsForTheTurn(nextThread));

        Thread releaser = start("releaser", holder::close);
        assertThat(handOffInFlight.await(10, TimeUnit.SECONDS)).as("the release passes the key on").isTrue();
        pickedThread.interrupt();
        // The picked waiter acts on the interrupt before the hand-off ends: it gives up, or waits on with the flag taken.
        await("the picked waiter acting on its interrupt", Duration.ofSeconds(10),
                () -> picked.isDone() || (waitsForTheTurn(pickedThread) && !pickedThread.isInterrupted()));
        finishHandOff.countDown();
        releaser.join(10_000);
        String pickedOutcome = picked.get(10, TimeUnit.SECONDS);
        String nextOutcome = next.get(10, TimeUnit.SECONDS);

        SoftAssertions.assertSoftly(softly -> {
            softly.assertThat(pickedOutcome).as("the interrupted waiter: holds the key, or leaves").isIn("HELD", "INTERRUPTED");
            softly.assertThat(nextOutcome).as("the waiter queued behind the interrupted one").isEqualTo("HELD");
            AcquireResult probe = store.tryAcquire(LockKind.EXCLUSIVE, key, "probe", 1_000);
            softly.assertThat(probe).as("the store, once every handle is closed").isInstanceOf(AcquireResult.Acquired.class);
            if (probe instanceof AcquireResult.Acquired acquired) {
                store.release(LockKind.EXCLUSIVE, key, "probe", acquired.fencingToken());
                softly.assertThat(locks.tryAcquire(key)).as("the next tryAcquire: this JVM's turn given back").isPresent()
                        .get().satisfies(LockHandle::close);
            }
        });
    }

    /** Takes the key, and releases it at once: HELD, or why it was not acquired. */
    private static String outcome(LockManager locks, LockRequest request) {
        try (LockHandle ignored = locks.acquire(request)) {
            return "HELD";
        } catch (LockNotAcquiredException refused) {
            return refused.reason().name();
        }
    }
}
