package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.spi.AcquireResult;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

/**
 * {@code lockAtLeastFor}, the scheduled-job setting: a job that finishes fast keeps its key taken until
 * the shortest hold has passed, so a node whose schedule fires a moment later does not run it again —
 * and the key frees itself then, with no release left to do.
 */
class LockAtLeastForTest extends EngineTestSupport {

    @Test
    void aReleaseBeforeLockAtLeastForKeepsTheKeyUntilThenAndNoLonger() {
        LockManager node1 = manager();
        LockManager node2 = manager();
        // Counted from before the call: the acquisition happened after this, so the key must stay taken 400 ms past it.
        long acquiredAt = System.nanoTime();
        LockHandle job = node1.acquire(LockRequest.builder(key).waitTime(Duration.ZERO)
                .lockAtLeastFor(Duration.ofMillis(400)).build());
        job.close();
        assertThat(job.state()).isEqualTo(LockState.RELEASED);

        assertThat(node2.tryAcquire(key)).as("another node right after the fast job").isEmpty();
        assertThat(node1.tryAcquire(key)).as("the same node too: the key is kept in the store, not here").isEmpty();
        LockHandle next = node2.acquire(key, Duration.ofSeconds(5));
        long freedAfterMillis = Duration.ofNanos(System.nanoTime() - acquiredAt).toMillis();
        next.close();
        assertThat(freedAfterMillis).as("ms until another node could take the key").isGreaterThanOrEqualTo(400);
        assertThat(node1.admin().watchedLeaseCount()).isZero();
    }

    @Test
    void anEarlyReleaseKeepsTheKeyToTheLastNanosecondNotAFractionOfAMillisecondLess() {
        RecordingBackend tapped = tapped();
        LockManager node = manager(tapped, b -> { });
        long before = System.nanoTime();
        node.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).lockAtLeastFor(Duration.ofMillis(400)).build()).close();
        // The release shortens the lease to what is left of lockAtLeastFor; the store counts it from when it got the call.
        RecordingBackend.SentRenewal kept = tapped.sentShortenings.get(0);
        long keptUntil = kept.sentAtNanos() + Duration.ofMillis(kept.renewal().leaseMillis()).toNanos();
        assertThat(keptUntil - before).as("ns the key stays taken after the acquisition began")
                .isGreaterThanOrEqualTo(Duration.ofMillis(400).toNanos());
    }

    /**
     * The watchdog sent a full-lease renewal just before the release, and it reaches the store after the release's
     * shortening: it must not extend the key again, or the key stays taken for a whole lease after lockAtLeastFor.
     * (The release used to wait for the renewal's answer; now it does not wait, and the renewal misses.)
     */
    @Test
    void aRenewalInFlightAtTheReleaseCannotKeepTheKeyForAWholeLease() throws Exception {
        RecordingBackend tapped = tapped();
        CountDownLatch renewalSent = new CountDownLatch(1);
        CountDownLatch renewalMayArrive = new CountDownLatch(1);
        tapped.beforeRenew(batch -> {
            if (batch.get(0).leaseMillis() == 600 && renewalSent.getCount() > 0) {
                renewalSent.countDown();
                try {
                    renewalMayArrive.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        AtomicInteger renewalsLanded = new AtomicInteger();
        tapped.aroundRenew(call -> {
            try {
                return call.get();
            } finally {
                renewalsLanded.incrementAndGet();
            }
        });
        LockManager node = manager(tapped, b -> b.leaseTime(Duration.ofMillis(600)));
        long acquiredAt = System.nanoTime();
        LockHandle job = node.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).lockAtLeastFor(Duration.ofMillis(500)).build());
        assertThat(renewalSent.await(10, TimeUnit.SECONDS)).as("the watchdog sent a renewal").isTrue();

        Thread releasing = start("releasing-job", job::close);
        releasing.join(10_000);
        assertThat(releasing.isAlive()).as("the release waits for no renewal").isFalse();
        assertThat(tapped.sentShortenings).as("the release shortened the lease").hasSize(1);
        renewalMayArrive.countDown();
        await("the late renewal to reach the store", Duration.ofSeconds(10), () -> renewalsLanded.get() > 0);

        long keepLeftMillis = 500 - Duration.ofNanos(System.nanoTime() - acquiredAt).toMillis();
        AcquireResult seen = manager().backend().tryAcquire(LockKind.EXCLUSIVE, key, "another-owner", 1_000);
        assertThat(seen).as("the key after the release, before lockAtLeastFor ends").isInstanceOf(AcquireResult.Held.class);
        assertThat(((AcquireResult.Held) seen).remainingTtlMillis()).as("ms the store keeps the key (lockAtLeastFor leaves "
                + keepLeftMillis + " ms)").isLessThanOrEqualTo(Math.max(0, keepLeftMillis) + 1);
    }

    @Test
    void aReleaseAfterLockAtLeastForFreesTheKeyAtOnce() throws InterruptedException {
        LockManager node1 = manager();
        LockHandle job = node1.acquire(LockRequest.builder(key).waitTime(Duration.ZERO)
                .lockAtLeastFor(Duration.ofMillis(50)).build());
        Thread.sleep(60);
        job.close();
        assertThat(manager().tryAcquire(key)).as("free right after the release").isPresent();
    }

    @Test
    void aKeptKeyTakenByAnotherOwnerMeanwhileIsReportedLostAtRelease() {
        LockManager node1 = manager();
        LockHandle job = node1.acquire(LockRequest.builder(key).waitTime(Duration.ZERO)
                .leaseTime(Duration.ofMillis(200)).lockAtLeastFor(Duration.ofMillis(150)).build());
        skipStoreTime(Duration.ofMillis(300));
        assertThat(manager().tryAcquire(key)).as("the store let the lease go").isPresent();
        assertThatThrownBy(job::close).isInstanceOf(LockLostException.class);
    }

    @Test
    void lockAtLeastForLongerThanTheFixedLeaseIsRefused() {
        assertThatThrownBy(() -> LockRequest.builder(key).leaseTime(Duration.ofSeconds(1)).lockAtLeastFor(Duration.ofSeconds(2)).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lockAtLeastFor (PT2S) must not exceed the fixed leaseTime (PT1S)");
        assertThatThrownBy(() -> LockRequest.builder(key).lockAtLeastFor(Duration.ofNanos(10)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lockAtLeastFor must be at least 1 ms");
    }

    /**
     * A lease under a millisecond used to pass the check and reach the store as 0 ms (toMillis), which stores refuse
     * or misread; every lease now follows the one rule of at least 30 ms.
     */
    @Test
    void aLeaseShorterThanAMillisecondIsRefusedWhenTheRequestIsBuilt() {
        assertThatThrownBy(() -> LockRequest.builder(key).leaseTime(Duration.ofNanos(500_000)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("leaseTime must be at least 30 ms, was PT0.0005S");
    }
}
