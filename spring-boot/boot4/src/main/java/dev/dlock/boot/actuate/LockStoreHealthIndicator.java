package dev.dlock.boot.actuate;

import dev.dlock.core.LockManager;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Health of the lock store as the lock manager sees it (see {@link LockStoreHealthCheck}), on Spring
 * Boot 4's health API; a failed ping is turned into DOWN with the exception by the base class.
 */
public class LockStoreHealthIndicator extends AbstractHealthIndicator {

    /** Detail: renewal calls in flight longer than their leases can afford, 0 when the watchdog keeps up. */
    public static final String WATCHDOG_STALLED_CALLS = LockStoreHealthCheck.WATCHDOG_STALLED_CALLS;

    private final LockStoreHealthCheck check;

    /** Creates the indicator over {@code lockManager} and its store. */
    public LockStoreHealthIndicator(LockManager lockManager) {
        super("dlock lock store health check failed");
        this.check = new LockStoreHealthCheck(lockManager);
    }

    /** Runs the check and reports its outcome. */
    @Override
    protected void doHealthCheck(Health.Builder builder) {
        LockStoreHealthCheck.Result result = check.check();
        (result.up() ? builder.up() : builder.down()).withDetails(result.details());
    }
}
