package dev.dlock.boot.metrics;

/**
 * The names, tags and descriptions of every dlock meter. Tags are bounded: the static lock name and
 * an outcome, never the resolved key.
 */
public final class LockMetrics {

    /** Timer: time spent acquiring, tagged {@link #TAG_LOCK_NAME} and {@link #TAG_RESULT}. */
    public static final String ACQUIRE = "dlock.acquire";
    /** Description of {@link #ACQUIRE}. */
    public static final String ACQUIRE_DESCRIPTION = "Time spent acquiring a distributed lock, waiting included";

    /** Timer: how long a lock was held, recorded at release, tagged {@link #TAG_LOCK_NAME}. */
    public static final String HELD = "dlock.held";
    /** Description of {@link #HELD}. */
    public static final String HELD_DESCRIPTION = "How long a distributed lock was held, recorded at release";

    /** Gauge: locks this JVM holds now, tagged {@link #TAG_LOCK_NAME}. */
    public static final String ACTIVE = "dlock.active";
    /** Description of {@link #ACTIVE}. */
    public static final String ACTIVE_DESCRIPTION = "Distributed locks this JVM holds now";

    /** Counter: watchdog lease renewals, tagged {@link #TAG_RESULT}. */
    public static final String RENEWALS = "dlock.renewals";
    /** Description of {@link #RENEWALS}. */
    public static final String RENEWALS_DESCRIPTION = "Lease renewals by the watchdog, by result";

    /** Counter: leases lost while held, tagged {@link #TAG_LOCK_NAME}. */
    public static final String LEASE_LOST = "dlock.lease.lost";
    /** Description of {@link #LEASE_LOST}. */
    public static final String LEASE_LOST_DESCRIPTION = "Leases lost while their lock was held";

    /**
     * Counter: pairs of lock names that two call paths of this JVM nested in opposite orders (a potential deadlock),
     * counted once per pair, tagged {@link #TAG_LOCK_NAME} and {@link #TAG_OTHER_LOCK_NAME} in alphabetical order.
     */
    public static final String LOCK_ORDER_INVERSIONS = "dlock.lock.order.inversions";
    /** Description of {@link #LOCK_ORDER_INVERSIONS}. */
    public static final String LOCK_ORDER_INVERSIONS_DESCRIPTION =
            "Pairs of lock names nested in opposite orders by two call paths: a potential deadlock";

    /**
     * Counter: an operator's forced releases this instance ordered (the endpoint's DELETE, or
     * {@code LockManager.forceRelease}), tagged {@link #TAG_LOCK_NAME}; the removed holders count a lost lease each.
     */
    public static final String FORCED_RELEASES = "dlock.lock.forced.releases";
    /** Description of {@link #FORCED_RELEASES}. */
    public static final String FORCED_RELEASES_DESCRIPTION = "Forced releases of a lock ordered by an operator from this instance";

    /** Gauge: leases the watchdog renews now. */
    public static final String WATCHDOG_LEASES = "dlock.watchdog.leases";
    /** Description of {@link #WATCHDOG_LEASES}. */
    public static final String WATCHDOG_LEASES_DESCRIPTION = "Leases under watch by the renewal watchdog";

    /** Gauge: watchdog renewal calls in flight for longer than their leases can afford (a stalled store node); 0 when healthy. */
    public static final String WATCHDOG_STALLED = "dlock.watchdog.stalled";
    /** Description of {@link #WATCHDOG_STALLED}. */
    public static final String WATCHDOG_STALLED_DESCRIPTION =
            "Watchdog renewal calls in flight for longer than their leases can afford; above 0, held leases may run out in the store";

    /** Tag: the lock's static name (the annotation's name, or its default). */
    public static final String TAG_LOCK_NAME = "lock.name";
    /** Tag: the second static lock name of a pair ({@link #LOCK_ORDER_INVERSIONS}). */
    public static final String TAG_OTHER_LOCK_NAME = "other.lock.name";
    /** Tag: the outcome of an acquisition or renewal. */
    public static final String TAG_RESULT = "result";

    /** {@link #TAG_RESULT} of {@link #ACQUIRE}: the lock was taken. */
    public static final String RESULT_ACQUIRED = "acquired";
    /** {@link #TAG_RESULT} of {@link #ACQUIRE}: the wait time passed. */
    public static final String RESULT_TIMEOUT = "timeout";
    /** {@link #TAG_RESULT} of {@link #ACQUIRE}: abortIf became true, or the waiting thread was interrupted. */
    public static final String RESULT_ABORTED = "aborted";
    /** {@link #TAG_RESULT} of {@link #ACQUIRE} and {@link #RENEWALS}: the store failed. */
    public static final String RESULT_ERROR = "error";
    /** {@link #TAG_RESULT} of {@link #RENEWALS}: the lease was extended. */
    public static final String RESULT_RENEWED = "renewed";
    /** {@link #TAG_RESULT} of {@link #RENEWALS}: the lease was gone or taken by another owner. */
    public static final String RESULT_LOST = "lost";

    private LockMetrics() {
    }

    /** The {@link #TAG_RESULT} of an acquisition that failed for {@code failure}. */
    public static String resultOf(dev.dlock.core.LockListener.AcquireFailure failure) {
        return switch (failure) {
            case TIMEOUT -> RESULT_TIMEOUT;
            case ABORTED, INTERRUPTED -> RESULT_ABORTED;
            case ERROR -> RESULT_ERROR;
        };
    }
}
