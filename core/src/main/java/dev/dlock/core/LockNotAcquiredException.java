package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import java.time.Duration;

/** The lock was not acquired: the wait expired, was aborted or interrupted. Nothing is left held. */
public class LockNotAcquiredException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    /** Why an acquisition ended without the lock. */
    public enum Reason {
        /** The wait time passed while someone else held the key. */
        TIMEOUT,
        /** The abort condition became true. */
        ABORTED,
        /** The waiting thread was interrupted; its interrupt status is kept. */
        INTERRUPTED
    }

    private final String lockName;
    private final String key;
    private final Reason reason;
    private final Duration waited;
    private final Duration waitTime;

    /** Creates the exception for lock {@code lockName} on {@code key}, with the wait the acquisition allowed unknown. */
    public LockNotAcquiredException(String lockName, String key, Reason reason, Duration waited) {
        this(lockName, key, reason, waited, null);
    }

    /** Creates the exception for lock {@code lockName} on {@code key}, whose acquisition allowed a wait of {@code waitTime}. */
    public LockNotAcquiredException(String lockName, String key, Reason reason, Duration waited, @Nullable Duration waitTime) {
        super(message(lockName, key, reason, waited, waitTime));
        this.lockName = lockName;
        this.key = key;
        this.reason = reason;
        this.waited = waited;
        this.waitTime = waitTime;
    }

    private static String message(String lockName, String key, Reason reason, Duration waited, @Nullable Duration waitTime) {
        String why = switch (reason) {
            // A single try did not wait: the time it took was the store's round trip, not a wait.
            case TIMEOUT -> waitTime != null && waitTime.isZero()
                    ? "held by another owner (tried once: the wait time is 0)"
                    : "still held by another owner after waiting " + waited.toMillis() + " ms";
            case ABORTED -> "abort condition became true after " + waited.toMillis() + " ms";
            case INTERRUPTED -> "interrupted after waiting " + waited.toMillis() + " ms";
        };
        return "Lock '" + lockName + "' on key '" + key + "' not acquired: " + why;
    }

    /** The lock's static name. */
    public String lockName() {
        return lockName;
    }

    /** The key that could not be locked. */
    public String key() {
        return key;
    }

    /** Why the acquisition ended. */
    public Reason reason() {
        return reason;
    }

    /** How long the caller waited. */
    public Duration waited() {
        return waited;
    }

    /**
     * The wait the acquisition allowed (its request's wait time, or the manager's default); {@code Duration.ZERO} for a
     * single try; null when not known (an exception made by other code).
     */
    public @Nullable Duration waitTime() {
        return waitTime;
    }
}
