package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import dev.dlock.testkit.RecordingBackend;

/**
 * The owner of an acquisition whose outcome is unknown is released again, about once a third of its lease: on a store
 * whose leases expire, until the lease has passed since the failure, whatever the releases answer (the command may
 * still be on its way); on a store that keeps leases by its session, until the store first answers. Here the store
 * call "fails" after the command reached the in-memory store, which the test then undoes, so the test decides when
 * the command lands.
 */
class UnknownAttemptsTest extends EngineTestSupport {

    /** A store call whose command the test lands later: the key is given back at once, and the call fails. */
    private RecordingBackend failingOnce(RecordingBackend tapped) {
        AtomicBoolean failed = new AtomicBoolean();
        tapped.afterAcquire((owner, result) -> {
            if (result instanceof AcquireResult.Acquired acquired && failed.compareAndSet(false, true)) {
                store.release(LockKind.EXCLUSIVE, key, owner, acquired.fencingToken());
                throw new LockBackendException("the reply was lost (test)", null);
            }
        });
        return tapped;
    }

    @Test
    void aCommandThatLandsAfterARetryFoundNothingIsStillFreedWithinOnePeriod() {
        RecordingBackend tapped = failingOnce(tapped());
        LockManager failing = manager(tapped, b -> { });
        Duration lease = Duration.ofSeconds(3);

        assertThatThrownBy(() -> failing.acquire(LockRequest.builder(key).leaseTime(lease).waitTime(Duration.ZERO).build()))
                .isInstanceOf(LockBackendException.class);
        String owner = tapped.acquiringOwners.get(0);
        await("the owner is released again", Duration.ofSeconds(10), () -> tapped.releases.get() >= 1);
        // Only now does the command land: "not held" answered before it proves nothing.
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner, lease.toMillis())).isInstanceOf(AcquireResult.Acquired.class);
        long landedAt = System.nanoTime();

        try (LockHandle taken = manager().acquire(key, Duration.ofSeconds(10))) {
            Duration after = Duration.ofNanos(System.nanoTime() - landedAt);
            assertThat(after).as("another manager got the key %s ms after the late command landed, with a 3 s lease",
                    after.toMillis()).isLessThan(Duration.ofMillis(2_500));
            assertThat(taken.isHeld()).isTrue();
        }
        assertThat(tapped.acquiringOwners).as("the owner of the unknown attempt is never used again").containsOnlyOnce(owner);
    }

    /**
     * A watchdog lease of 30 s: a renewal period is 10 s. A command that lands right after its client gave up is freed
     * about as soon as it lands, not a period later: a waiter in another instance that waits 3 s gets the key.
     */
    @Test
    void aCommandThatLandsJustAfterTheClientGaveUpIsFreedLongBeforeAThirdOfTheLease() {
        RecordingBackend tapped = tapped();
        AtomicReference<Supplier<AcquireResult>> lateCommand = failFirstAcquisitionAtTheClient(tapped);
        LockManager failing = manager(tapped, b -> { });
        assertThatThrownBy(() -> failing.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).build()))
                .isInstanceOf(LockBackendException.class);
        assertThat(lateCommand.get().get()).as("the command lands after the client gave up")
                .isInstanceOf(AcquireResult.Acquired.class);

        try (LockHandle taken = manager().acquire(key, Duration.ofSeconds(3))) {
            assertThat(taken.isHeld()).as("another instance took the key the late command had taken for nobody").isTrue();
        }
    }

    @Test
    void anAsynchronousAcquisitionWhoseOutcomeIsUnknownIsReleasedAgainToo() {
        RecordingBackend tapped = failingOnce(tapped());
        LockManager failing = manager(tapped, b -> { });
        Duration lease = Duration.ofSeconds(3);

        CompletableFuture<LockHandle> attempt = failing.acquireAsync(LockRequest.builder(key).leaseTime(lease)
                .waitTime(Duration.ZERO).build());
        assertThatThrownBy(() -> attempt.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(LockBackendException.class);
        String owner = tapped.acquiringOwners.get(0);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner, lease.toMillis())).as("the command lands late")
                .isInstanceOf(AcquireResult.Acquired.class);
        long landedAt = System.nanoTime();

        try (LockHandle taken = manager().acquire(key, Duration.ofSeconds(10))) {
            Duration after = Duration.ofNanos(System.nanoTime() - landedAt);
            assertThat(after).as("another manager got the key %s ms after the late command landed, with a 3 s lease",
                    after.toMillis()).isLessThan(Duration.ofMillis(2_500));
        }
    }

    @Test
    void releasesEndOnceTheLeaseHasPassedSinceTheFailure() throws InterruptedException {
        RecordingBackend tapped = failingOnce(tapped());
        LockManager failing = manager(tapped, b -> { });

        long failedAt = System.nanoTime();
        assertThatThrownBy(() -> failing.acquire(LockRequest.builder(key).leaseTime(Duration.ofMillis(300))
                .waitTime(Duration.ZERO).build())).isInstanceOf(LockBackendException.class);
        await("the owner is released again", Duration.ofSeconds(10), () -> tapped.releases.get() >= 1);
        TimeUnit.NANOSECONDS.sleep(Math.max(0, failedAt + TimeUnit.SECONDS.toNanos(1) - System.nanoTime()));
        int releases = tapped.releases.get();
        // Absence can only be watched for: half a second more, five periods, brings none.
        TimeUnit.MILLISECONDS.sleep(500);

        assertThat(tapped.releases.get()).as("no release after the 300 ms lease passed").isEqualTo(releases);
        assertThat(releases).as("one release a period (100 ms) until the lease passed").isBetween(1, 4);
        assertThat(failing.unknownAttempts.size()).isZero();
    }

    @Test
    void onAStoreThatKeepsLeasesByItsSessionTheFirstAnswerEndsTheReleases() throws InterruptedException {
        RecordingBackend tapped = failingOnce(tapped());
        LockManager failing = manager(new SessionKept(tapped), b -> b.leaseTime(Duration.ofMillis(300)));

        assertThatThrownBy(() -> failing.acquire(key, Duration.ZERO)).isInstanceOf(LockBackendException.class);
        await("the owner is released again", Duration.ofSeconds(10), () -> tapped.releases.get() >= 1);
        // Five periods of the 300 ms watchdog lease.
        TimeUnit.MILLISECONDS.sleep(500);

        assertThat(tapped.releases.get()).as("the store answered the first release").isEqualTo(1);
        assertThat(failing.unknownAttempts.size()).isZero();
    }

    @Test
    void theQueueIsBoundedAndDropsWhatExceedsIt() {
        UnknownAttempts attempts = new UnknownAttempts(store, false, 30_000);
        for (int i = 0; i < UnknownAttempts.MAX_PENDING + 5; i++) {
            attempts.add(LockKind.EXCLUSIVE, key, "owner-" + i, 30_000);
        }

        assertThat(attempts.size()).isEqualTo(UnknownAttempts.MAX_PENDING);
    }

    /** {@code delegate} presented as a store that keeps leases by its session (as ZooKeeper does). */
    private static final class SessionKept implements LockBackend, SessionLeases {
        private static final long SESSION_HOLD_MILLIS = TimeUnit.HOURS.toMillis(1);
        private final LockBackend delegate;

        SessionKept(LockBackend delegate) {
            this.delegate = delegate;
        }

        @Override
        public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
            return delegate.tryAcquire(kind, key, owner, leaseMillis == UNTIL_RELEASED ? SESSION_HOLD_MILLIS : leaseMillis);
        }

        @Override
        public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
            return delegate.release(kind, key, owner, fencingToken);
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            return delegate.renew(batch);
        }

        @Override
        public void withdraw(LockKind kind, String key, String owner) {
            delegate.withdraw(kind, key, owner);
        }

        @Override
        public BackendCapabilities capabilities() {
            return BackendCapabilities.DEFAULT.withSessionLeases(this);
        }

        @Override
        public void addLeaseLossListener(LeaseLossListener listener) {
            // This store never loses a session.
        }

        @Override
        public long ping() {
            return delegate.ping();
        }
    }
}
