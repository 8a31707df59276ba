package dev.dlock.boot.actuate;

import dev.dlock.core.LockBackend;
import dev.dlock.core.LockManager;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import java.time.Duration;
import java.util.Objects;

/**
 * Health of the lock store as the lock manager sees it: DOWN while the watchdog has renewal calls
 * stalled for longer than their leases can afford (held leases may then run out in the store), DOWN
 * with the error when the store cannot be reached, otherwise UP with the PING round trip.
 */
public class LockStoreHealthIndicator extends AbstractHealthIndicator {

    /** Detail: renewal calls in flight longer than their leases can afford, 0 when the watchdog keeps up. */
    public static final String WATCHDOG_STALLED_CALLS = "watchdogStalledCalls";

    private final LockManager lockManager;

    /** Creates the indicator over {@code lockManager} and its store. */
    public LockStoreHealthIndicator(LockManager lockManager) {
        super("dlock lock store health check failed");
        this.lockManager = Objects.requireNonNull(lockManager, "lockManager");
    }

    /** Reports a stalled watchdog, else pings the store; a failed ping is turned into DOWN with the exception by the base class. */
    @Override
    protected void doHealthCheck(Health.Builder builder) {
        LockBackend backend = lockManager.backend();
        builder.withDetail("store", backend.getClass().getSimpleName());
        int stalledCalls = lockManager.watchdogStalledCalls();
        if (stalledCalls > 0) {
            // No ping: it would wait on the stalled store too, and the leases are already at risk.
            builder.down().withDetail(WATCHDOG_STALLED_CALLS, stalledCalls);
            return;
        }
        Duration roundTrip = Duration.ofNanos(backend.ping());
        builder.up()
                .withDetail("pingMillis", roundTrip.toNanos() / 1_000_000.0)
                .withDetail(WATCHDOG_STALLED_CALLS, stalledCalls);
    }
}
