package dev.dlock.boot.metrics;

/**
 * The names, tags and descriptions of every dlock meter: {@code dlock.lock.*} for what is measured per lock name,
 * {@code dlock.watchdog.*} for the renewal watchdog. Tags are bounded: the static lock name and an outcome, never the
 * resolved key. The timers and long-task timers are those of dlock's observations
 * ({@link dev.dlock.boot.observation.LockObservationDocumentation}), made by the application's meter observation
 * handler; the counters and gauges are registered by dlock ({@link MicrometerLockListener}, {@link LockManagerMetrics}).
 */
public final class LockMetrics {

    /**
     * Timer: time spent acquiring, waiting included, tagged {@link #TAG_LOCK_NAME}, {@link #TAG_RESULT} and the
     * observation handler's {@code error}; also the name of the acquire observation.
     */
    public static final String ACQUIRE = "dlock.lock.acquire";
    /** Description of {@link #ACQUIRE}. */
    public static final String ACQUIRE_DESCRIPTION = "Time spent acquiring a distributed lock, waiting included";

    /** Long-task timer: acquisitions waiting now, tagged {@link #TAG_LOCK_NAME}. */
    public static final String ACQUIRE_ACTIVE = ACQUIRE + ".active";
    /** Description of {@link #ACQUIRE_ACTIVE}. */
    public static final String ACQUIRE_ACTIVE_DESCRIPTION = "Acquisitions of a distributed lock waiting now";

    /**
     * Timer: how long a lock was held, recorded at release, tagged {@link #TAG_LOCK_NAME} and the observation
     * handler's {@code error}; also the name of the hold observation.
     */
    public static final String HOLD = "dlock.lock.hold";
    /** Description of {@link #HOLD}. */
    public static final String HOLD_DESCRIPTION = "How long a distributed lock was held, recorded at release";

    /** Long-task timer: locks this JVM holds now and for how long, tagged {@link #TAG_LOCK_NAME}. */
    public static final String HOLD_ACTIVE = HOLD + ".active";
    /** Description of {@link #HOLD_ACTIVE}. */
    public static final String HOLD_ACTIVE_DESCRIPTION = "Distributed locks this JVM holds now";

    /** Counter: leases lost while held, tagged {@link #TAG_LOCK_NAME}. */
    public static final String LEASE_LOST = "dlock.lock.lease.lost";
    /** Description of {@link #LEASE_LOST}. */
    public static final String LEASE_LOST_DESCRIPTION = "Leases lost while their lock was held";

    /** Counter: watchdog lease renewals, tagged {@link #TAG_RESULT}. */
    public static final String RENEWALS = "dlock.watchdog.renewals";
    /** Description of {@link #RENEWALS}. */
    public static final String RENEWALS_DESCRIPTION = "Lease renewals by the watchdog, by result";

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
     * {@code LockAdmin.forceRelease}), tagged {@link #TAG_LOCK_NAME}; the removed holders count a lost lease each.
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
