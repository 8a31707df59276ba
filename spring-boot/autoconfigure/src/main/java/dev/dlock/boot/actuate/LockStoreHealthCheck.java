package dev.dlock.boot.actuate;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockManager;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What the {@code dlock} health indicator reports, apart from Spring Boot's health types (which moved
 * between Boot 3 and Boot 4): DOWN while the watchdog has renewal calls stalled for longer than their
 * leases can afford (held leases may then run out in the store), otherwise UP with the PING round
 * trip; a store that cannot be reached throws, which each Boot line's indicator turns into DOWN.
 */
public final class LockStoreHealthCheck {

    /** Detail: renewal calls in flight longer than their leases can afford, 0 when the watchdog keeps up. */
    public static final String WATCHDOG_STALLED_CALLS = "watchdogStalledCalls";

    private final LockManager lockManager;

    /** Creates the check over {@code lockManager} and its store. */
    public LockStoreHealthCheck(LockManager lockManager) {
        this.lockManager = Objects.requireNonNull(lockManager, "lockManager");
    }

    /** Checks the watchdog, then pings the store; throws what the ping throws. */
    public Result check() {
        LockBackend backend = lockManager.backend();
        Map<String, Object> details = new LinkedHashMap<>();
        details.put("store", backend.getClass().getSimpleName());
        int stalledCalls = lockManager.admin().watchdogStalledCalls();
        if (stalledCalls > 0) {
            // No ping: it would wait on the stalled store too, and the leases are already at risk.
            details.put(WATCHDOG_STALLED_CALLS, stalledCalls);
            return new Result(false, details);
        }
        Duration roundTrip = Duration.ofNanos(backend.ping());
        details.put("pingMillis", roundTrip.toNanos() / 1_000_000.0);
        details.put(WATCHDOG_STALLED_CALLS, stalledCalls);
        return new Result(true, details);
    }

    /**
     * The outcome of one check.
     *
     * @param up      true for UP, false for DOWN
     * @param details the health details, in order
     */
    public record Result(boolean up, Map<String, Object> details) {
    }
}
