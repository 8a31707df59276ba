package dev.dlock.core;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.testkit.RecordingBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A store that takes a key without its fencing token (Redis exclusive locks; here the in-memory store built to do
 * the same) issues it when the holder first asks. What holders rely on: the token is issued once per hold and kept,
 * is larger than every earlier holder's, is never issued once the hold ended (after a release, or after the key
 * passed to the next holder in this JVM, which has its own store owner), a lost
 * lease gets none and is reported lost once, and a store failure leaves the lock held for the next ask.
 */
class FencingTokenOnRequestTest extends EngineTestSupport {

    private final InMemoryLockBackend lazyStore = InMemoryLockBackend.builder()
            .clock(() -> System.nanoTime() + skippedNanos.get()).fencingTokensOnRequest(true).build();
    /** The store as the engine sees it: counts issuances, and can hold or fail one. */
    private final RecordingBackend backend = new RecordingBackend(lazyStore);
    private final List<Long> acquiredTokens = new CopyOnWriteArrayList<>();
    private final List<String> lossReports = new CopyOnWriteArrayList<>();
    private final LockListener listener = new LockListener() {
        @Override
        public void onAcquired(String lockName, String key, long fencingToken, Duration waited) {
            acquiredTokens.add(fencingToken);
        }

        @Override
        public void onLeaseLost(String lockName, String key, String reason) {
            lossReports.add(reason);
        }
    };

    @AfterEach
    void closeLazyStore() {
        lazyStore.close();
    }

    private LockManager locks() {
        return manager(backend, b -> b.listener(listener));
    }

    @Test
    void theTokenIsIssuedOnTheFirstAskOnlyAndKeptForTheWholeHold() {
        LockManager locks = locks();
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            assertThat(acquiredTokens).as("the token the listener was told at acquisition").containsExactly(0L);
            assertThat(locks.admin().heldLocks()).singleElement().satisfies(held -> assertThat(held.fencingTokenIssued()).isFalse());
            assertThat(lock.toString()).contains("fencing token not issued");
            assertThat(backend.issuances).as("issuances after acquiring and reading diagnostics").hasValue(0);

            long token = lock.fencingToken();
            assertThat(token).isPositive();
            assertThat(lock.fencingToken()).as("asked again").isEqualTo(token);
            try (LockHandle inner = locks.acquire(key, Duration.ZERO)) {
                assertThat(inner.fencingToken()).as("the re-entrant hold's token").isEqualTo(token);
            }
            assertThat(backend.issuances).as("issuances for one hold").hasValue(1);
            assertThat(locks.admin().heldLocks()).singleElement().satisfies(held -> assertThat(held.fencingToken()).isEqualTo(token));
            assertThat(lock.toString()).contains("fencing token " + token);
        }
    }

    @Test
    void aTokenIssuedOnRequestIsLargerThanEveryEarlierHoldersIssuedOrNot() {
        LockManager locks = locks();
        long first;
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            first = lock.fencingToken();
        }
        try (LockHandle neverAsked = manager(backend, b -> { }).acquire(key, Duration.ZERO)) {
            assertThat(neverAsked.isHeld()).isTrue();
        }
        // A fair lock of the key issues its token with the acquisition, from the same sequence.
        long fair;
        try (LockHandle lock = locks.acquire(LockRequest.builder(key).kind(LockKind.FAIR).waitTime(Duration.ZERO).build())) {
            fair = lock.fencingToken();
        }
        long last;
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            last = lock.fencingToken();
        }
        assertThat(List.of(first, fair, last)).as("tokens of the holders that asked, in turn").isSorted().doesNotHaveDuplicates();
    }

    @Test
    void aHoldReleasedBeforeItsTokenWasAskedForGetsNoneAndTheStoreIssuesNone() {
        LockManager locks = locks();
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        Lease lease = leaseOf(lock);
        lock.close();
        assertThatThrownBy(lock::fencingToken).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(key).hasMessageContaining("released");
        assertThatThrownBy(lease::fencingToken).as("asked of the lease itself").isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(key);
        assertThat(backend.issuances).as("issuances sent to the store").hasValue(0);
        assertThat(lossReports).isEmpty();
    }

    /**
     * The key passes to the next thread of this JVM under the next holder's own store owner: the former holder gets no
     * token (the engine refuses, and the store would too: its owner no longer holds the key), the next one its own.
     */
    @Test
    void afterAHandOffTheFormerHolderGetsNoTokenAndTheNextHolderGetsItsOwn() throws Exception {
        LockManager locks = locks();
        LockHandle first = locks.acquire(key, Duration.ZERO);
        Lease firstLease = leaseOf(first);
        CompletableFuture<LockHandle> next = new CompletableFuture<>();
        Thread successor = start("successor", () -> next.complete(locks.acquire(key, Duration.ofSeconds(10))));
        await("the successor to queue for the key", Duration.ofSeconds(10), () -> waitsForTheTurn(successor));
        first.close();
        try (LockHandle second = next.get(10, TimeUnit.SECONDS)) {
            assertThat(backend.passes).as("how the key passed on").containsExactly("handOff");
            assertThat(leaseOf(second).owner).as("the store owner after the hand-off").isNotEqualTo(firstLease.owner);
            assertThat(lazyStore.issueFencingToken(LockKind.EXCLUSIVE, key, firstLease.owner))
                    .as("a token the store issues to the former holder's owner").isEmpty();
            assertThatThrownBy(firstLease::fencingToken).as("the former holder's token").isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining(key);
            assertThat(backend.issuances).as("issuances before the next holder asks").hasValue(0);
            assertThat(second.fencingToken()).isPositive();
            assertThat(backend.issuances).hasValue(1);
        }
    }

    /**
     * A holder that says it reads its token has the store issue it with the acquisition (blocking or not): no issuance
     * of its own, the listener told the token at once, and the token above every earlier holder's, issued either way.
     */
    @Test
    void aHolderThatSaysItReadsItsTokenHasItIssuedWithTheAcquisition() throws Exception {
        LockManager locks = locks();
        long onRequest;
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            onRequest = lock.fencingToken();
        }
        long withAcquisition;
        try (LockHandle lock = locks.acquire(fenced().waitTime(Duration.ZERO).build())) {
            assertThat(locks.admin().heldLocks()).singleElement().satisfies(held -> assertThat(held.fencingTokenIssued()).isTrue());
            withAcquisition = lock.fencingToken();
        }
        LockHandle async = locks.acquireAsync(fenced().waitTime(Duration.ofSeconds(5)).build()).get(10, TimeUnit.SECONDS);
        long asynchronous = async.fencingToken();
        async.close();
        assertThat(backend.issuances).as("issuances: only for the hold that did not say it reads its token").hasValue(1);
        assertThat(backend.acquiresIssuingToken).as("acquisitions that had the store issue the token").hasValue(2);
        assertThat(acquiredTokens).as("the tokens the listener was told at acquisition").containsExactly(0L, withAcquisition, asynchronous);
        assertThat(List.of(onRequest, withAcquisition, asynchronous)).as("tokens in turn").isSorted().doesNotHaveDuplicates();
    }

    /**
     * The key passes to a next local holder that said it reads its token: the hand-off has the store issue that holder's
     * token in the same call, above the previous holder's, and the previous holder's owner can no longer have one issued.
     * A next holder that did not say so is handed the key without one and asks for it.
     */
    @Test
    void aHandOffToAWaiterThatReadsItsTokenIssuesAHigherOneInTheSameCall() throws Exception {
        LockManager locks = locks();
        LockHandle first = locks.acquire(fenced().waitTime(Duration.ZERO).build());
        long firstToken = first.fencingToken();
        Lease firstLease = leaseOf(first);
        LockHandle second = handedOver(locks, first, fenced());
        long secondToken = leaseOf(second).issuedToken();
        assertThat(secondToken).as("the next holder's token, issued with the hand-off").isGreaterThan(firstToken);
        assertThat(second.fencingToken()).isEqualTo(secondToken);
        assertThat(backend.handOffsIssuingToken).as("hand-offs that had the store issue the token").hasValue(1);
        assertThat(lazyStore.issueFencingToken(LockKind.EXCLUSIVE, key, firstLease.owner))
                .as("a token the store issues to the former holder's owner").isEmpty();

        LockHandle third = handedOver(locks, second, LockRequest.builder(key));
        assertThat(leaseOf(third).issuedToken()).as("a next holder that did not say it reads its token")
                .isEqualTo(AcquireResult.Acquired.TOKEN_ON_REQUEST);
        assertThat(third.fencingToken()).as("its token, asked for").isGreaterThan(secondToken);
        third.close();
        assertThat(backend.passes).as("how the key passed on").containsExactly("handOff", "handOff", "release");
        assertThat(backend.issuances).as("issuances: only the holder that did not say so").hasValue(1);
        assertThat(lossReports).isEmpty();
    }

    /** Queues a thread for {@code key} with {@code next}, closes {@code holder} and returns the handle the key passed to. */
    private LockHandle handedOver(LockManager locks, LockHandle holder, LockRequest.Builder next) throws Exception {
        CompletableFuture<LockHandle> handle = new CompletableFuture<>();
        Thread successor = start("successor", () -> handle.complete(locks.acquire(next.waitTime(Duration.ofSeconds(10)).build())));
        await("the successor to queue for the key", Duration.ofSeconds(10), () -> waitsForTheTurn(successor));
        int handOffs = backend.handOffs.get();
        holder.close();
        LockHandle passed = handle.get(10, TimeUnit.SECONDS).detachFromThread();
        assertThat(backend.handOffs).as("the key passed on by a hand-off").hasValue(handOffs + 1);
        return passed;
    }

    private LockRequest.Builder fenced() {
        return LockRequest.builder(key).readsFencingToken(true);
    }

    @Test
    void aLeaseLostBeforeItsTokenGetsNoneAndIsReportedLostOnce() {
        LockManager locks = locks();
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        // The store lets the lease run out (its clock jumps), and another owner takes the key.
        skipStoreTime(Duration.ofMinutes(5));
        try (LockHandle other = manager(lazyStore, b -> { }).acquire(key, Duration.ZERO)) {
            assertThatThrownBy(lock::fencingToken).isInstanceOf(LockLostException.class).hasMessageContaining(key);
            assertThat(lock.state()).isEqualTo(LockState.LOST);
            assertThatThrownBy(lock::fencingToken).as("asked again").isInstanceOf(LockLostException.class);
            assertThat(backend.issuances).as("the store asked once; the loss is known after that").hasValue(1);
            assertThat(lossReports).as("loss reports").hasSize(1);
            assertThat(other.fencingToken()).as("the new holder's token").isPositive();
        }
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
        assertThat(lossReports).as("loss reports after the release too").hasSize(1);
    }

    @Test
    void aStoreFailureWhileIssuingLeavesTheLockHeldAndTheNextAskIssuesIt() {
        AtomicInteger failures = new AtomicInteger(1);
        backend.aroundIssue(issue -> {
            if (failures.getAndDecrement() > 0) {
                throw new LockBackendException("store unreachable (test)", null);
            }
            return issue.get();
        });
        LockManager locks = locks();
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            assertThatThrownBy(lock::fencingToken).isInstanceOf(LockBackendException.class);
            assertThat(lock.state()).isEqualTo(LockState.HELD);
            assertThat(lock.isHeld()).isTrue();
            assertThat(lock.fencingToken()).as("the next ask").isPositive();
            assertThat(backend.issuances).hasValue(2);
        }
        assertThat(lossReports).isEmpty();
    }

    /**
     * A thread interrupted while another thread of the hold is issuing the token waits for that one store call (it is
     * short, and the token it brings is this hold's), gets the same token, and keeps its interrupt.
     */
    @Test
    void anInterruptedAskWaitsForTheIssuanceUnderWayAndKeepsItsInterrupt() throws Exception {
        CountDownLatch issuing = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        backend.aroundIssue(issue -> {
            issuing.countDown();
            awaitQuietly(finish);
            return issue.get();
        });
        LockHandle lock = locks().acquire(LockRequest.builder(key).waitTime(Duration.ZERO).build()).detachFromThread();
        CompletableFuture<Long> firstAsk = new CompletableFuture<>();
        start("first-ask", () -> firstAsk.complete(lock.fencingToken()));
        assertThat(issuing.await(10, TimeUnit.SECONDS)).isTrue();
        AtomicLong secondToken = new AtomicLong();
        AtomicReference<Boolean> keptInterrupt = new AtomicReference<>();
        Thread secondAsk = start("second-ask", () -> {
            secondToken.set(lock.fencingToken());
            keptInterrupt.set(Thread.currentThread().isInterrupted());
        });
        await("the second ask to wait for the first", Duration.ofSeconds(10),
                () -> secondAsk.getState() == Thread.State.WAITING || secondAsk.getState() == Thread.State.TIMED_WAITING);
        secondAsk.interrupt();
        finish.countDown();
        long token = firstAsk.get(10, TimeUnit.SECONDS);
        secondAsk.join(10_000);
        assertThat(secondToken).as("the interrupted ask's token").hasValue(token);
        assertThat(keptInterrupt).as("the interrupt kept").hasValue(true);
        assertThat(backend.issuances).hasValue(1);
        lock.close();
    }

    @Test
    void anAsynchronousHoldAsksForItsTokenFromAnyThread() throws Exception {
        LockManager locks = locks();
        LockHandle lock = locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(5)).build()).get(10, TimeUnit.SECONDS);
        assertThat(acquiredTokens).containsExactly(0L);
        long token = CompletableFuture.supplyAsync(lock::fencingToken).get(10, TimeUnit.SECONDS);
        assertThat(token).isPositive();
        assertThat(lock.fencingToken()).isEqualTo(token);
        lock.close();
        assertThat(backend.issuances).hasValue(1);
    }

    /**
     * The first ask and the close race, from a start barrier, with a successor queued so that the close hands the key
     * over: the ask either gets a token issued before the hand-off began, or is refused
     * because the hold ended; never a token issued after, never a lease reported lost.
     */
    @Test
    void aCloseRacingTheFirstAskNeverLetsATokenBeIssuedAfterTheHoldEnded() throws Exception {
        AtomicLong clock = new AtomicLong();
        AtomicLong lastIssuedAt = new AtomicLong();
        AtomicLong lastPassStartedAt = new AtomicLong();
        backend.aroundIssue(issue -> {
            // A slow store call widens the window in which a close could slip in between the check and the issuance.
            LockSupport.parkNanos(200_000);
            OptionalLong token = issue.get();
            if (token.isPresent()) {
                lastIssuedAt.set(clock.incrementAndGet());
            }
            return token;
        });
        backend.aroundHandOff(handOff -> {
            lastPassStartedAt.set(clock.incrementAndGet());
            return handOff.get();
        });
        LockManager locks = locks();
        int issuedFirst = 0;
        int refused = 0;
        for (int round = 0; round < 100; round++) {
            lastIssuedAt.set(0);
            lastPassStartedAt.set(Long.MAX_VALUE);
            LockHandle lock = locks.acquire(key, Duration.ZERO).detachFromThread();
            CompletableFuture<LockHandle> next = new CompletableFuture<>();
            Thread successor = start("successor-" + round, () -> next.complete(locks.acquire(key, Duration.ofSeconds(10))));
            await("the successor to queue", Duration.ofSeconds(10), () -> waitsForTheTurn(successor));
            CyclicBarrier go = new CyclicBarrier(2);
            CompletableFuture<Object> ask = CompletableFuture.supplyAsync(() -> {
                awaitBarrier(go);
                Throwable failure = catchThrowable(lock::fencingToken);
                return failure == null ? "token" : failure;
            });
            awaitBarrier(go);
            lock.close();
            Object outcome = ask.get(10, TimeUnit.SECONDS);
            if (outcome.equals("token")) {
                issuedFirst++;
                assertThat(lastIssuedAt.get()).as("round %s: the token issued before the hand-off began", round)
                        .isLessThan(lastPassStartedAt.get());
            } else {
                refused++;
                assertThat(outcome).as("round %s: the ask after the hold ended", round).isInstanceOf(IllegalStateException.class);
                assertThat(lastIssuedAt.get()).as("round %s: no token issued", round).isZero();
            }
            next.get(10, TimeUnit.SECONDS).close();
        }
        assertThat(lossReports).as("leases reported lost").isEmpty();
        assertThat(issuedFirst + refused).isEqualTo(100);
    }

    private static void awaitBarrier(CyclicBarrier barrier) {
        try {
            barrier.await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
