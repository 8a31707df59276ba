package dev.dlock.core;

/** What the store answered to one acquire attempt. */
public sealed interface AcquireResult {

    /** The key was free and is now held by the caller; {@code fencingToken} is larger than any issued before for the key. */
    record Acquired(long fencingToken) implements AcquireResult {
    }

    /**
     * Someone else holds the key; it expires in {@code remainingTtlMillis} unless renewed
     * (negative when the store cannot tell).
     */
    record Held(long remainingTtlMillis) implements AcquireResult {
    }
}
