package dev.dlock.core;

import java.time.Duration;

/**
 * A snapshot of one lock this JVM holds, for diagnostics (the Actuator endpoint).
 *
 * @param holderThread the thread bound to the lock, or null once detached for asynchronous work
 * @param leaseExpiresIn this JVM's conservative estimate of the remaining lease; null when the store keeps the lease alive by its session
 */
public record HeldLock(String lockName, String key, String holderThread, Duration heldFor,
                       Duration leaseExpiresIn, long renewals, long fencingToken, boolean watchdogManaged,
                       LockState state) {
}
