package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import dev.dlock.core.spi.AcquireResult;
import java.time.Duration;

/**
 * A snapshot of one lock this JVM holds, for diagnostics (the Actuator endpoint).
 *
 * @param holderThread the thread bound to the lock, or null once detached for asynchronous work
 * @param leaseExpiresIn this JVM's conservative estimate of the remaining lease; null when the store keeps the lease alive by its session
 * @param fencingToken the token issued to the holder, or {@link #TOKEN_NOT_ISSUED} while a store that issues tokens on
 *                     request has not been asked for it (reading diagnostics never asks)
 */
public record HeldLock(String lockName, String key, @Nullable String holderThread, Duration heldFor,
                       @Nullable Duration leaseExpiresIn, long renewals, long fencingToken, boolean watchdogManaged,
                       LockState state) {

    /** The {@link #fencingToken()} of a hold whose token is not issued yet. */
    public static final long TOKEN_NOT_ISSUED = AcquireResult.Acquired.TOKEN_ON_REQUEST;

    /** Whether the holder's fencing token was issued. */
    public boolean fencingTokenIssued() {
        return fencingToken != TOKEN_NOT_ISSUED;
    }
}
