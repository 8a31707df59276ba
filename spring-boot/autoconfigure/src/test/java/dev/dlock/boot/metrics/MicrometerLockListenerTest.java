package dev.dlock.boot.metrics;

import dev.dlock.boot.BootLine;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener.AcquireFailure;
import dev.dlock.core.LockListener.RenewalOutcome;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

/** The listener's meters per event, and its promise never to throw into a locked call. */
class MicrometerLockListenerTest {

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerLockListener listener = new MicrometerLockListener(registry);

    @Test
    void recordsEachEventUnderItsResult() {
        listener.onAcquired("orders", "orders:1", 7, Duration.ofMillis(3));
        listener.onAcquireFailed("orders", "orders:2", AcquireFailure.TIMEOUT, Duration.ofMillis(5), null);
        listener.onAcquireFailed("orders", "orders:3", AcquireFailure.ABORTED, Duration.ofMillis(1), null);
        listener.onAcquireFailed("orders", "orders:4", AcquireFailure.INTERRUPTED, Duration.ofMillis(1), null);
        listener.onAcquireFailed("orders", "orders:5", AcquireFailure.ERROR, Duration.ofMillis(1), new IllegalStateException());
        assertThat(active("orders")).isEqualTo(1.0);
        listener.onRenewal("orders", "orders:1", RenewalOutcome.RENEWED);
        listener.onRenewal("orders", "orders:1", RenewalOutcome.ERROR);
        listener.onRenewal("orders", "orders:1", RenewalOutcome.LOST);
        listener.onLeaseLost("orders", "orders:1", "expired");
        listener.onReleased("orders", "orders:1", Duration.ofMillis(40));
        listener.onForcedRelease("orders", "orders:1", java.util.List.of());

        assertThat(acquires("orders", LockMetrics.RESULT_ACQUIRED)).isEqualTo(1);
        assertThat(acquires("orders", LockMetrics.RESULT_TIMEOUT)).isEqualTo(1);
        assertThat(acquires("orders", LockMetrics.RESULT_ABORTED)).isEqualTo(2);
        assertThat(acquires("orders", LockMetrics.RESULT_ERROR)).isEqualTo(1);
        assertThat(registry.get(LockMetrics.HELD).tag(LockMetrics.TAG_LOCK_NAME, "orders").timer().totalTime(
                java.util.concurrent.TimeUnit.MILLISECONDS)).isEqualTo(40.0);
        assertThat(active("orders")).isZero();
        for (String result : new String[] {LockMetrics.RESULT_RENEWED, LockMetrics.RESULT_LOST, LockMetrics.RESULT_ERROR}) {
            assertThat(registry.get(LockMetrics.RENEWALS).tag(LockMetrics.TAG_RESULT, result).counter().count()).isEqualTo(1);
        }
        assertThat(registry.get(LockMetrics.LEASE_LOST).tag(LockMetrics.TAG_LOCK_NAME, "orders").counter().count()).isEqualTo(1);
        assertThat(registry.get(LockMetrics.FORCED_RELEASES).tag(LockMetrics.TAG_LOCK_NAME, "orders").counter().count()).isEqualTo(1);
        assertThat(registry.getMeters()).allSatisfy(meter -> assertThat(meter.getId().getTags())
                .noneMatch(tag -> tag.getValue().startsWith("orders:")));
    }

    @Test
    void aFailingRegistryNeverReachesTheCaller() {
        SimpleMeterRegistry broken = new SimpleMeterRegistry();
        MicrometerLockListener failing = new MicrometerLockListener(broken);
        broken.config().meterFilter(new MeterFilter() {
            @Override
            public Meter.Id map(Meter.Id id) {
                throw new IllegalStateException("registry is broken");
            }
        });
        // The guarantee lives in the lock manager, which calls every listener behind a guard: test it there.
        try (RedisServerProcess redis = RedisServerProcess.start();
             UnifiedJedis client = BootLine.redisClient(redis.host(), redis.port());
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).listener(failing).build()) {
            assertThatCode(() -> {
                try (LockHandle lock = locks.acquire("some-key", Duration.ZERO)) {
                    assertThat(lock.isHeld()).isTrue();
                    // Another thread finds it held: the acquire-failed event goes to the broken registry too.
                    AtomicReference<Optional<LockHandle>> other = new AtomicReference<>();
                    Thread contender = new Thread(() -> other.set(locks.tryAcquire("some-key")));
                    contender.start();
                    contender.join(10_000);
                    assertThat(other.get()).isEmpty();
                }
            }).doesNotThrowAnyException();
        }
    }

    private double acquires(String lockName, String result) {
        return registry.get(LockMetrics.ACQUIRE).tag(LockMetrics.TAG_LOCK_NAME, lockName)
                .tag(LockMetrics.TAG_RESULT, result).timer().count();
    }

    private double active(String lockName) {
        return registry.get(LockMetrics.ACTIVE).tag(LockMetrics.TAG_LOCK_NAME, lockName).gauge().value();
    }
}
