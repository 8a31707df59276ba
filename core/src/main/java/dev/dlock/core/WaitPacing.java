package dev.dlock.core;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * How long a waiter pauses before it asks the store again: until the holder's lease runs out when
 * release notices will wake it sooner, otherwise a jittered backoff that doubles up to a bound and
 * never outlasts the holder's lease, the wait, or the abort-check interval. One per acquisition.
 */
final class WaitPacing {

    private static final long MIN_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    private static final long MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    private static final long ONE_MILLI = TimeUnit.MILLISECONDS.toNanos(1);

    private long backoff = MIN_BACKOFF_NANOS;

    /**
     * The next pause, given whether notices flow, the holder's remaining lease ({@code ttlNanos}, negative
     * when unknown), the time left to wait, and the request's abort check.
     */
    long nextPauseNanos(boolean noticesActive, long ttlNanos, long remainingNanos, LockRequest request) {
        long pause;
        if (noticesActive && ttlNanos >= 0) {
            pause = ttlNanos + ONE_MILLI;
        } else {
            pause = jitter(backoff);
            backoff = Math.min(MAX_BACKOFF_NANOS, backoff * 2);
            if (ttlNanos >= 0) {
                pause = Math.min(pause, ttlNanos + ONE_MILLI);
            }
        }
        pause = Math.min(pause, remainingNanos);
        if (request.abortIf() != null) {
            pause = Math.min(pause, request.abortCheckInterval().toNanos());
        }
        return pause;
    }

    private static long jitter(long nanos) {
        return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
    }
}
