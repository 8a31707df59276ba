package dev.dlock.redis;

import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Redis frozen by SIGSTOP past the holder's lease: no renewal is confirmed, so the engine knows at the lease's end that
 * the store may have let the key go, and a section that stops on lease lost is interrupted then — while Redis is still
 * frozen, not when it comes back — and its release reports the loss.
 */
class StopWorkOnFrozenRedisTest {

    private static final Duration LEASE = Duration.ofMillis(1_500);

    @Test
    void aSectionAsleepIsInterruptedAtTheEndOfItsLeaseWhileRedisIsFrozen() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start();
             RedisClient client = RedisTestSupport.client(server);
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).leaseTime(LEASE).build()) {
            CountDownLatch entered = new CountDownLatch(1);
            AtomicLong interruptedAt = new AtomicLong();
            AtomicReference<String> inside = new AtomicReference<>("not run");
            CompletableFuture<String> seen = new CompletableFuture<>();
            Thread holder = new Thread(() -> {
                String release;
                try {
                    locks.withLock(LockRequest.builder("frozen").stopWorkOnLeaseLost(true).build(), () -> {
                        entered.countDown();
                        try {
                            Thread.sleep(60_000);
                            inside.set("slept to its end");
                        } catch (InterruptedException e) {
                            interruptedAt.set(System.nanoTime());
                            inside.set("interrupted");
                        }
                        return null;
                    });
                    release = "release went through";
                } catch (LockLostException e) {
                    release = "release reported the loss";
                }
                seen.complete(inside.get() + "; " + release + (Thread.currentThread().isInterrupted() ? "; left interrupted" : ""));
            }, "frozen-redis-holder");
            holder.setDaemon(true);
            holder.start();
            assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();

            long frozenAt;
            long resumedAt;
            String outcome;
            try (RedisServerProcess.Stall stall = server.stall()) {
                frozenAt = System.nanoTime();
                // Bounded by the event, not a sleep: the section's interrupt, which must come while Redis is frozen.
                awaitNonZero(interruptedAt, Duration.ofSeconds(20));
                resumedAt = System.nanoTime();
                outcome = seen.get(20, TimeUnit.SECONDS);
            }

            assertThat(interruptedAt.get()).as("interrupted while Redis was still frozen").isLessThan(resumedAt);
            assertThat(Duration.ofNanos(interruptedAt.get() - frozenAt)).as("from the freeze to the interrupt")
                    .isLessThan(LEASE.plus(Duration.ofSeconds(10)));
            assertThat(outcome).isEqualTo("interrupted; release reported the loss");
        }
    }

    private static void awaitNonZero(AtomicLong value, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (value.get() == 0) {
            assertThat(System.nanoTime() - deadline).as("the section interrupted within %s", timeout).isNegative();
            Thread.sleep(10);
        }
    }
}
