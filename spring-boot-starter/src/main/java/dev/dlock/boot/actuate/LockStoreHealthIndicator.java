package dev.dlock.boot.actuate;

import dev.dlock.core.LockBackend;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import java.time.Duration;
import java.util.Objects;

/** Health of the lock store: UP with the PING round trip, DOWN with the error when the store cannot be reached. */
public class LockStoreHealthIndicator extends AbstractHealthIndicator {

    private final LockBackend backend;

    /** Creates the indicator over {@code backend}. */
    public LockStoreHealthIndicator(LockBackend backend) {
        super("dlock lock store health check failed");
        this.backend = Objects.requireNonNull(backend, "backend");
    }

    /** Pings the store; a failure is turned into DOWN with the exception by the base class. */
    @Override
    protected void doHealthCheck(Health.Builder builder) {
        Duration roundTrip = Duration.ofNanos(backend.ping());
        builder.up()
                .withDetail("store", backend.getClass().getSimpleName())
                .withDetail("pingMillis", roundTrip.toNanos() / 1_000_000.0);
    }
}
