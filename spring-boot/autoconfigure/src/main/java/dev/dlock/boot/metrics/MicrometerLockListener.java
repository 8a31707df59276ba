package dev.dlock.boot.metrics;

import dev.dlock.core.LockHolder;
import dev.dlock.core.LockListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Records dlock's lock events as the Micrometer meters named in {@link LockMetrics}. A metrics
 * failure never reaches the locked call: the lock manager calls every listener behind its own
 * guard, which logs and drops whatever a listener throws.
 * Meters are created once per lock name and cached, so an event costs a map lookup and a record.
 */
public final class MicrometerLockListener implements LockListener {

    private final MeterRegistry registry;
    private final ConcurrentMap<String, NameMeters> byName = new ConcurrentHashMap<>();
    private final Counter renewed;
    private final Counter renewalsLost;
    private final Counter renewalErrors;

    /** Creates the listener and registers the meters that do not depend on a lock name. */
    public MicrometerLockListener(MeterRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.renewed = renewals(LockMetrics.RESULT_RENEWED);
        this.renewalsLost = renewals(LockMetrics.RESULT_LOST);
        this.renewalErrors = renewals(LockMetrics.RESULT_ERROR);
    }

    /** Records the wait of a successful acquisition and counts the lock as active. */
    @Override
    public void onAcquired(String lockName, String key, long fencingToken, Duration waited) {
        NameMeters meters = meters(lockName);
        meters.acquired.record(waited);
        meters.active.incrementAndGet();
    }

    /** Records the wait of a failed acquisition under its result. */
    @Override
    public void onAcquireFailed(String lockName, String key, AcquireFailure failure, Duration waited, Throwable error) {
        NameMeters meters = meters(lockName);
        Timer timer = switch (failure) {
            case TIMEOUT -> meters.timeout;
            // An interrupted waiter gave up like an aborted one; the result tag stays a closed set.
            case ABORTED, INTERRUPTED -> meters.aborted;
            case ERROR -> meters.error;
        };
        timer.record(waited);
    }

    /** Records the hold time and stops counting the lock as active. */
    @Override
    public void onReleased(String lockName, String key, Duration held) {
        NameMeters meters = meters(lockName);
        meters.held.record(held);
        meters.active.decrementAndGet();
    }

    /** Counts one renewal attempt under its result. */
    @Override
    public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
        switch (outcome) {
            case RENEWED -> renewed.increment();
            case LOST -> renewalsLost.increment();
            case ERROR -> renewalErrors.increment();
        }
    }

    /** Counts a lease lost while held. */
    @Override
    public void onLeaseLost(String lockName, String key, String reason) {
        meters(lockName).leaseLost.increment();
    }

    /** Counts a pair of lock names nested in opposite orders (reported once per pair). */
    @Override
    public void onLockOrderInversion(String lockName, String otherLockName) {
        Counter.builder(LockMetrics.LOCK_ORDER_INVERSIONS)
                .description(LockMetrics.LOCK_ORDER_INVERSIONS_DESCRIPTION)
                .tag(LockMetrics.TAG_LOCK_NAME, lockName)
                .tag(LockMetrics.TAG_OTHER_LOCK_NAME, otherLockName)
                .register(registry)
                .increment();
    }

    /** Counts an operator's forced release ordered from this instance, by lock name (never the key). */
    @Override
    public void onForcedRelease(String lockName, String key, List<LockHolder> holders) {
        Counter.builder(LockMetrics.FORCED_RELEASES)
                .description(LockMetrics.FORCED_RELEASES_DESCRIPTION)
                .tag(LockMetrics.TAG_LOCK_NAME, lockName)
                .register(registry)
                .increment();
    }

    private NameMeters meters(String lockName) {
        NameMeters meters = byName.get(lockName);
        return meters != null ? meters : byName.computeIfAbsent(lockName, this::register);
    }

    private NameMeters register(String lockName) {
        AtomicInteger active = new AtomicInteger();
        Gauge.builder(LockMetrics.ACTIVE, active, AtomicInteger::get)
                .description(LockMetrics.ACTIVE_DESCRIPTION)
                .tag(LockMetrics.TAG_LOCK_NAME, lockName)
                .strongReference(true)
                .register(registry);
        return new NameMeters(
                acquireTimer(lockName, LockMetrics.RESULT_ACQUIRED),
                acquireTimer(lockName, LockMetrics.RESULT_TIMEOUT),
                acquireTimer(lockName, LockMetrics.RESULT_ABORTED),
                acquireTimer(lockName, LockMetrics.RESULT_ERROR),
                Timer.builder(LockMetrics.HELD)
                        .description(LockMetrics.HELD_DESCRIPTION)
                        .tag(LockMetrics.TAG_LOCK_NAME, lockName)
                        .register(registry),
                Counter.builder(LockMetrics.LEASE_LOST)
                        .description(LockMetrics.LEASE_LOST_DESCRIPTION)
                        .tag(LockMetrics.TAG_LOCK_NAME, lockName)
                        .register(registry),
                active);
    }

    private Timer acquireTimer(String lockName, String result) {
        return Timer.builder(LockMetrics.ACQUIRE)
                .description(LockMetrics.ACQUIRE_DESCRIPTION)
                .tag(LockMetrics.TAG_LOCK_NAME, lockName)
                .tag(LockMetrics.TAG_RESULT, result)
                .register(registry);
    }

    private Counter renewals(String result) {
        return Counter.builder(LockMetrics.RENEWALS)
                .description(LockMetrics.RENEWALS_DESCRIPTION)
                .tag(LockMetrics.TAG_RESULT, result)
                .register(registry);
    }


    /** The meters of one lock name, created together on its first event. */
    private record NameMeters(Timer acquired, Timer timeout, Timer aborted, Timer error, Timer held,
                              Counter leaseLost, AtomicInteger active) {
    }
}
