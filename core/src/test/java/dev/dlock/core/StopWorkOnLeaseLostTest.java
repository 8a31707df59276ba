package dev.dlock.core;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A holder that asked for it has its work stopped when its lease is lost: a blocking section is interrupted, an
 * asynchronous holder's reaction runs, once, on the events thread, as soon as the loss is known (another JVM's forced
 * release, a renewal that finds the key gone, the manager's shutdown); never after the section ended, and an interrupt
 * of ours never outlives the section. Two managers over one store stand for two JVMs.
 */
class StopWorkOnLeaseLostTest extends EngineTestSupport {

    /** Far longer than any wait below: a section that is not stopped would still be blocked when the test looks. */
    private static final long BLOCKED_SECONDS = 60;

    private LockRequest stopping() {
        return LockRequest.builder(key).stopWorkOnLeaseLost(true).build();
    }

    /** Runs {@code section} under {@code request} on its own thread; the future holds what the thread saw. */
    private CompletableFuture<String> section(LockManager locks, LockRequest request, CountDownLatch entered, Blocking section) {
        CompletableFuture<String> seen = new CompletableFuture<>();
        start("holder", () -> {
            String inside;
            try {
                inside = locks.withLock(request, () -> {
                    entered.countDown();
                    try {
                        section.block();
                        return "ran to its end";
                    } catch (InterruptedException e) {
                        return "interrupted";
                    }
                });
            } catch (LockLostException e) {
                inside = "release reported the loss";
            } catch (RuntimeException e) {
                inside = e.toString();
            }
            seen.complete(inside + (Thread.currentThread().isInterrupted() ? ", thread left interrupted" : ""));
        });
        return seen;
    }

    @FunctionalInterface
    private interface Blocking {
        void block() throws InterruptedException;
    }

    @Test
    void anotherJvmsForcedReleaseInterruptsASectionBlockedInAQueue() throws Exception {
        LockManager locks = manager();
        LockManager operator = manager();
        CountDownLatch entered = new CountDownLatch(1);
        BlockingQueue<String> never = new ArrayBlockingQueue<>(1);
        AtomicReference<String> inSection = new AtomicReference<>();
        CompletableFuture<String> seen = new CompletableFuture<>();
        start("holder", () -> {
            try (LockHandle held = locks.acquire(stopping())) {
                entered.countDown();
                try {
                    never.poll(BLOCKED_SECONDS, TimeUnit.SECONDS);
                    inSection.set("ran to its end");
                } catch (InterruptedException e) {
                    inSection.set("interrupted, lease " + held.state());
                }
            } catch (LockLostException e) {
                seen.complete(inSection.get() + "; release reported the loss"
                        + (Thread.currentThread().isInterrupted() ? ", thread left interrupted" : ""));
            }
            seen.complete(inSection.get() + "; release went through");
        });
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        assertThat(operator.admin().forceRelease(key)).hasSize(1);

        assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo("interrupted, lease LOST; release reported the loss");
    }

    /** A virtual thread's section (Java 21+; the build runs these tests on JDK 25 too) is interrupted as a platform thread's. */
    @Test
    void aVirtualThreadsSectionIsInterruptedByAForcedRelease() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(Runtime.version().feature() >= 21, "no virtual threads on this Java");
        LockManager locks = manager();
        LockManager operator = manager();
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<String> seen = new CompletableFuture<>();
        Thread holder = AsyncRuntime.virtualThreads("stop-test-vt-").newThread(() -> {
            String inside;
            try {
                inside = locks.withLock(stopping(), () -> {
                    entered.countDown();
                    try {
                        new ArrayBlockingQueue<String>(1).poll(BLOCKED_SECONDS, TimeUnit.SECONDS);
                        return "ran to its end";
                    } catch (InterruptedException e) {
                        return "interrupted";
                    }
                });
            } catch (LockLostException e) {
                inside = "release reported the loss";
            }
            seen.complete(inside + (Thread.currentThread().isInterrupted() ? ", thread left interrupted" : ""));
        });
        holder.start();
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        operator.admin().forceRelease(key);

        assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo("release reported the loss");
    }

    @Test
    void aRenewalThatFindsTheKeyGoneInterruptsASectionAsleep() throws Exception {
        LockManager locks = manager(store, b -> b.leaseTime(Duration.ofMillis(900)));
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<String> seen = section(locks, stopping(), entered, () -> Thread.sleep(BLOCKED_SECONDS * 1_000));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        // The store lets the lease go behind the holder's back; the next renewal (a third of the lease) finds it gone.
        skipStoreTime(Duration.ofSeconds(5));

        assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo("release reported the loss");
    }

    @Test
    void theManagersShutdownInterruptsASectionItEnds() throws Exception {
        LockManager locks = manager(store, b -> b.shutdownGracePeriod(Duration.ZERO));
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<String> seen = section(locks, stopping(), entered, () -> Thread.sleep(BLOCKED_SECONDS * 1_000));
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        locks.close();

        assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo("release reported the loss");
    }

    @Test
    void aSectionThatIgnoresTheInterruptLeavesNoInterruptBehind() throws Exception {
        LockManager locks = manager();
        LockManager operator = manager();
        CountDownLatch entered = new CountDownLatch(1);
        CompletableFuture<String> seen = new CompletableFuture<>();
        start("holder", () -> {
            try {
                locks.withLock(stopping(), () -> {
                    entered.countDown();
                    // Busy, never looking at the interrupt: it ends only once it sees its thread interrupted.
                    while (!Thread.currentThread().isInterrupted()) {
                        Thread.onSpinWait();
                    }
                    return null;
                });
                seen.complete("release went through");
            } catch (LockLostException e) {
                seen.complete("release reported the loss" + (Thread.currentThread().isInterrupted() ? ", thread left interrupted" : ""));
            }
        });
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        operator.admin().forceRelease(key);

        assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo("release reported the loss");
    }

    @Test
    void noStopWithoutTheRequestAsking() throws Exception {
        LockManager locks = manager();
        LockManager operator = manager();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch forced = new CountDownLatch(1);
        CompletableFuture<String> seen = section(locks, LockRequest.builder(key).build(), entered,
                () -> {
                    forced.await();
                    Thread.sleep(300);
                });
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

        operator.admin().forceRelease(key);
        forced.countDown();

        assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo("release reported the loss");
    }

    @Test
    void anAsynchronousHoldersReactionRunsOnceOnTheEventsThread() throws Exception {
        LockManager locks = manager(store, b -> b.watchdogThreadName("stop-test-watchdog"));
        LockManager operator = manager();
        LockHandle held = locks.acquireAsync(LockRequest.builder(key).build()).get(10, TimeUnit.SECONDS);
        List<String> ranOn = new CopyOnWriteArrayList<>();
        CompletableFuture<Object> work = new CompletableFuture<>();
        LossReaction reaction = held.onLeaseLost(() -> {
            ranOn.add(Thread.currentThread().getName());
            work.cancel(false);
        });

        operator.admin().forceRelease(key);

        assertThatThrownBy(() -> work.get(10, TimeUnit.SECONDS)).isInstanceOf(java.util.concurrent.CancellationException.class);
        assertThat(reaction.fired()).isTrue();
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);
        assertThat(ranOn).containsExactly("stop-test-watchdog-events");
    }

    @Test
    void aReactionArmedOnALeaseLostAlreadyRunsAtOnce() throws Exception {
        LockManager locks = manager();
        LockManager operator = manager();
        LockHandle held = locks.acquire(LockRequest.builder(key).build());
        operator.admin().forceRelease(key);
        awaitLost(held);
        CountDownLatch ran = new CountDownLatch(1);

        held.onLeaseLost(ran::countDown);

        assertThat(ran.await(10, TimeUnit.SECONDS)).as("the reaction armed after the loss ran").isTrue();
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);
    }

    /**
     * The loss is found while the section runs, but its stop is still queued behind a listener when the section ends
     * and releases: the stop must not land on the thread (now doing other work) nor run the holder's reaction.
     */
    @Test
    void aStopQueuedWhenTheSectionEndsNeverLandsAfterIt() throws Exception {
        String busyKey = key + ":busy";
        CountDownLatch listenerBlocks = new CountDownLatch(1);
        CountDownLatch secondLossTold = new CountDownLatch(1);
        LockManager locks = manager(store, b -> b.listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                if (key.equals(busyKey)) {
                    awaitQuietly(listenerBlocks);
                } else {
                    secondLossTold.countDown();
                }
            }
        }));
        LockManager operator = manager();
        LockHandle busy = locks.acquire(LockRequest.builder(busyKey).build());
        AtomicInteger reactionRuns = new AtomicInteger();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch sectionMayEnd = new CountDownLatch(1);
        CountDownLatch afterSection = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(1);
        CompletableFuture<String> seen = new CompletableFuture<>();
        start("holder", () -> {
            String outcome;
            try (LockHandle held = locks.acquire(stopping())) {
                held.onLeaseLost(reactionRuns::incrementAndGet);
                entered.countDown();
                awaitQuietly(sectionMayEnd);
                outcome = "release went through";
            } catch (LockLostException e) {
                outcome = "release reported the loss";
            }
            released.countDown();
            try {
                // Other work of the thread's, after the section: an interrupt landing now would break it.
                awaitQuietly(afterSection);
                Thread.sleep(200);
                seen.complete(outcome + ", later work uninterrupted");
            } catch (InterruptedException e) {
                seen.complete(outcome + ", later work interrupted");
            }
        });
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        operator.admin().forceRelease(busyKey);
        // The events thread now blocks in the listener; the holder's loss and its stops queue behind it.
        operator.admin().forceRelease(key);
        sectionMayEnd.countDown();
        assertThat(released.await(10, TimeUnit.SECONDS)).as("the section ended and released").isTrue();

        listenerBlocks.countDown();
        assertThat(secondLossTold.await(10, TimeUnit.SECONDS)).as("the events queued behind the listener ran").isTrue();
        afterSection.countDown();

        assertThat(seen.get(10, TimeUnit.SECONDS)).isEqualTo("release reported the loss, later work uninterrupted");
        assertThat(reactionRuns).as("the holder's reaction, disarmed by its release").hasValue(0);
        assertThatThrownBy(busy::close).isInstanceOf(LockLostException.class);
    }

    @Test
    void aHandleDetachedFromItsThreadNoLongerInterruptsIt() throws Exception {
        LockManager locks = manager();
        LockManager operator = manager();
        LockHandle held = locks.acquire(stopping());
        held.detachFromThread();

        operator.admin().forceRelease(key);
        awaitLost(held);
        Thread.sleep(200);

        assertThat(Thread.interrupted()).as("this thread, which the work left").isFalse();
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);
    }

    @Test
    void aCleanReleaseFollowedByALateLossNoticeStopsNothing() throws Exception {
        LockManager locks = manager();
        LockManager operator = manager();
        AtomicInteger reactionRuns = new AtomicInteger();
        LockHandle held = locks.acquire(stopping());
        held.onLeaseLost(reactionRuns::incrementAndGet);
        held.close();

        // The same key taken again by another JVM and forced away from it: a notice that reaches this JVM late.
        LockHandle next = operator.acquire(key, Duration.ofSeconds(5));
        locks.admin().forceRelease(key);
        Thread.sleep(200);

        assertThat(reactionRuns).hasValue(0);
        assertThat(Thread.interrupted()).isFalse();
        assertThatThrownBy(next::close).isInstanceOf(LockLostException.class);
        assertThatThrownBy(() -> held.onLeaseLost(reactionRuns::incrementAndGet)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("released through this handle");
    }

    private static void awaitLost(LockHandle held) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (held.state() != LockState.LOST) {
            assertThat(System.nanoTime() - deadline).as("%s lost", held).isNegative();
            Thread.onSpinWait();
        }
    }
}
