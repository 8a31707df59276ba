package dev.dlock.boot.metrics;

import dev.dlock.boot.BootLine;
import dev.dlock.core.LockHandle;
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

/** The listener's counters per event, and its promise never to throw into a locked call. */
class MicrometerLockListenerTest {

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final MicrometerLockListener listener = new MicrometerLockListener(registry);

    @Test
    void countsEachEventUnderItsResult() {
        listener.onAcquireAttempt("orders", "orders:1");
        assertThat(leasesLost("orders")).as("registered with the name's first acquisition").isZero();
        listener.onRenewal("orders", "orders:1", RenewalOutcome.RENEWED);
        listener.onRenewal("orders", "orders:1", RenewalOutcome.ERROR);
        listener.onRenewal("orders", "orders:1", RenewalOutcome.LOST);
        listener.onLeaseLost("orders", "orders:1", "expired");
        listener.onReleased("orders", "orders:1", Duration.ofMillis(40));
        listener.onForcedRelease("orders", "orders:1", java.util.List.of());

        for (String result : new String[] {LockMetrics.RESULT_RENEWED, LockMetrics.RESULT_LOST, LockMetrics.RESULT_ERROR}) {
            assertThat(registry.get(LockMetrics.RENEWALS).tag(LockMetrics.TAG_RESULT, result).counter().count()).isEqualTo(1);
        }
        assertThat(leasesLost("orders")).isEqualTo(1);
        assertThat(registry.get(LockMetrics.FORCED_RELEASES).tag(LockMetrics.TAG_LOCK_NAME, "orders").counter().count()).isEqualTo(1);
        assertThat(registry.getMeters()).allSatisfy(meter -> assertThat(meter.getId().getTags())
                .noneMatch(tag -> tag.getValue().startsWith("orders:")));
        assertThat(registry.getMeters()).as("the timers are the observations', not the listener's")
                .noneMatch(meter -> meter.getId().getType() == Meter.Type.TIMER || meter.getId().getType() == Meter.Type.GAUGE);
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

    private double leasesLost(String lockName) {
        return registry.get(LockMetrics.LEASE_LOST).tag(LockMetrics.TAG_LOCK_NAME, lockName).counter().count();
    }
}
