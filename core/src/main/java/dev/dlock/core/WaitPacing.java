package dev.dlock.core;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * How long a waiter pauses before it asks the store again: when release notices will wake it sooner,
 * until the holder's lease runs out but at most {@link #NOTICE_RECHECK_NANOS}; otherwise a jittered
 * backoff that doubles up to a bound and never outlasts the holder's lease. Never longer than the wait
 * or the abort-check interval. One per acquisition.
 */
final class WaitPacing {

    /**
     * The longest a waiter relies on a release notice alone. A notice can be lost while the subscription looks
     * healthy: on Redis a failover can lose the mark that makes the holder's release publish (replication is
     * asynchronous) while the waiter's pub/sub connection survives, so nothing tells it to ask again.
     */
    static final long NOTICE_RECHECK_NANOS = TimeUnit.SECONDS.toNanos(1);
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
            pause = Math.min(ttlNanos + ONE_MILLI, NOTICE_RECHECK_NANOS);
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
