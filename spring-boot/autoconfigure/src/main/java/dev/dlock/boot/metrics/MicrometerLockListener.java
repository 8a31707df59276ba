package dev.dlock.boot.metrics;

import dev.dlock.core.LockHolder;
import dev.dlock.core.LockListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Records dlock's lock events as the counters named in {@link LockMetrics}: lost leases, renewals, lock-order
 * inversions and forced releases. The timers (acquire, hold) and the long-task timers of what waits and what is held
 * now are the observations' ({@link dev.dlock.boot.observation.LockObservationListener}), so that each measure has one
 * meter. A metrics failure never reaches the locked call: the lock manager calls every listener behind its own guard,
 * which logs and drops whatever a listener throws. A lock name's counter is registered at its first acquisition, so
 * it reads 0 (rather than nothing) until a lease is lost.
 */
public final class MicrometerLockListener implements LockListener {

    private final MeterRegistry registry;
    private final ConcurrentMap<String, Counter> leasesLost = new ConcurrentHashMap<>();
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

    /** Registers the lock name's counter, so that a panel or an alert reads 0 before the first loss. */
    @Override
    public void onAcquireAttempt(String lockName, String key) {
        leaseLost(lockName);
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
        leaseLost(lockName).increment();
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

    private Counter leaseLost(String lockName) {
        Counter counter = leasesLost.get(lockName);
        return counter != null ? counter : leasesLost.computeIfAbsent(lockName, name -> Counter.builder(LockMetrics.LEASE_LOST)
                .description(LockMetrics.LEASE_LOST_DESCRIPTION)
                .tag(LockMetrics.TAG_LOCK_NAME, name)
                .register(registry));
    }

    private Counter renewals(String result) {
        return Counter.builder(LockMetrics.RENEWALS)
                .description(LockMetrics.RENEWALS_DESCRIPTION)
                .tag(LockMetrics.TAG_RESULT, result)
                .register(registry);
    }
}
