package dev.dlock.redis;

/** The delay before the next reconnect: doubles after each failure up to a cap, starts over after a success. Not thread-safe. */
final class ReconnectBackoff {

    private static final long INITIAL_MILLIS = 50;
    private static final long MAX_MILLIS = 2_000;

    private long millis = INITIAL_MILLIS;

    /** The delay the next failure waits. */
    long millis() {
        return millis;
    }

    /** The delay to wait now; the one after it doubles. */
    long next() {
        long current = millis;
        millis = Math.min(millis * 2, MAX_MILLIS);
        return current;
    }

    /** A connection succeeded: the next failure waits the initial delay. */
    void reset() {
        millis = INITIAL_MILLIS;
    }
}
