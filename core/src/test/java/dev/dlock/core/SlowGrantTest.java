package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/**
 * A grant whose reply arrives after the lease could have run out in the store (a reply delayed by the
 * network, a paused client) is no lock: another owner may have taken the key meanwhile. The fault
 * suite caught dlock handing such a grant to the caller, who then ran its section beside the next
 * holder. The engine now gives it back and asks again.
 */
class SlowGrantTest extends EngineTestSupport {

    private TappedBackend slowFirstReply(long replyDelayMillis) {
        TappedBackend backend = tapped();
        AtomicInteger slowReplies = new AtomicInteger(1);
        backend.afterAcquire(result -> {
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
        TappedBackend backend = slowFirstReply(150);
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(60)));
        try (LockHandle lock = locks.acquire(key, Duration.ofSeconds(5))) {
            assertThat(lock.isHeld()).as("the lock handed out is held").isTrue();
            assertThat(backend.acquires).as("store acquisitions").hasValue(2);
        }
    }

    @Test
    void aFixedLeaseGrantArrivingAfterItsLeaseIsGivenBackAndAskedAgain() {
        TappedBackend backend = slowFirstReply(150);
        LockManager locks = manager(backend, b -> { });
        try (LockHandle lock = locks.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(5))
                .leaseTime(Duration.ofMillis(100)).build())) {
            assertThat(lock.isHeld()).isTrue();
            assertThat(backend.acquires).hasValue(2);
        }
    }

    @Test
    void anAsynchronousGrantArrivingAfterItsLeaseIsGivenBackToo() throws Exception {
        TappedBackend backend = slowFirstReply(150);
        LockManager locks = manager(backend, b -> b.leaseTime(Duration.ofMillis(60)));
        LockHandle lock = locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(5)).build()).get(10, TimeUnit.SECONDS);
        assertThat(lock.isHeld()).isTrue();
        assertThat(backend.acquires).hasValue(2);
        lock.close();
    }

    @Test
    void whenEveryReplyIsTooSlowTheWaitEndsWithATimeout() {
        TappedBackend backend = tapped();
        backend.afterAcquire(result -> {
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
}
