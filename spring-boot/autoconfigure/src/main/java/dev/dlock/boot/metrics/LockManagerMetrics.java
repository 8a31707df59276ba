package dev.dlock.boot.metrics;

import dev.dlock.core.LockAdmin;
import dev.dlock.core.LockManager;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import java.util.Objects;

/**
 * Registers the gauges read from a {@link LockManager} ({@link LockMetrics#WATCHDOG_LEASES},
 * {@link LockMetrics#WATCHDOG_STALLED}). Kept apart from {@link MicrometerLockListener} because the
 * manager is built with its listeners.
 */
public final class LockManagerMetrics implements MeterBinder {

    private final LockManager lockManager;

    /** Creates the binder over {@code lockManager}. */
    public LockManagerMetrics(LockManager lockManager) {
        this.lockManager = Objects.requireNonNull(lockManager, "lockManager");
    }

    /** Registers {@link LockMetrics#WATCHDOG_LEASES} and {@link LockMetrics#WATCHDOG_STALLED} with {@code registry}. */
    @Override
    public void bindTo(MeterRegistry registry) {
        Gauge.builder(LockMetrics.WATCHDOG_LEASES, lockManager.admin(), LockAdmin::watchedLeaseCount)
                .description(LockMetrics.WATCHDOG_LEASES_DESCRIPTION)
                .register(registry);
        Gauge.builder(LockMetrics.WATCHDOG_STALLED, lockManager.admin(), LockAdmin::watchdogStalledCalls)
                .description(LockMetrics.WATCHDOG_STALLED_DESCRIPTION)
                .register(registry);
    }
}
