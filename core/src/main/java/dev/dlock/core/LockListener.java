package dev.dlock.core;

import java.time.Duration;
import java.util.List;

/**
 * Receives lock events for metrics, tracing or auditing. Methods run on the calling thread, except what the watchdog
 * or the store's session finds (renewals, and the leases they find lost): those come in order from the manager's
 * events thread ({@code <watchdog thread name>-events}), so that a listener that blocks holds up no renewal; a loss
 * still queued there when the holder releases is told by the release, before {@code onReleased}. Keep them
 * fast all the same; an exception thrown here is caught and logged, never passed to the caller. Re-entrant
 * acquisitions produce no events.
 *
 * <p>The events of one acquisition and of its hold come in two forms: with the {@link AcquisitionContext} the engine
 * passes to each of them (the same object from the attempt to the release), and with the lock name and key only. The
 * engine calls the first, which by default calls the second: implement either. A listener that pairs a start with
 * its end (a span, a long-task timer) keeps its state on the context: an asynchronous acquisition's events come from
 * two threads, and two readers of one key are two acquisitions.
 */
public interface LockListener {

    /** A listener that ignores every event. */
    LockListener NO_OP = new LockListener() {
    };

    /** An acquisition starts (before any wait). */
    default void onAcquireAttempt(String lockName, String key) {
    }

    /** An acquisition starts (before any wait), on the thread that asked for it; calls {@link #onAcquireAttempt(String, String)}. */
    default void onAcquireAttempt(AcquisitionContext acquisition) {
        onAcquireAttempt(acquisition.lockName(), acquisition.key());
    }

    /**
     * An acquisition succeeded after {@code waited}. {@code fencingToken} is 0 when the store issues the token only
     * when the holder first asks for it (Redis exclusive locks): listeners never cause one to be issued.
     */
    default void onAcquired(String lockName, String key, long fencingToken, Duration waited) {
    }

    /** {@code acquisition} succeeded; calls {@link #onAcquired(String, String, long, Duration)}. */
    default void onAcquired(AcquisitionContext acquisition, long fencingToken, Duration waited) {
        onAcquired(acquisition.lockName(), acquisition.key(), fencingToken, waited);
    }

    /** An acquisition ended without the lock; {@code error} is set for {@link AcquireFailure#ERROR}. */
    default void onAcquireFailed(String lockName, String key, AcquireFailure failure, Duration waited, Throwable error) {
    }

    /** {@code acquisition} ended without the lock; calls {@link #onAcquireFailed(String, String, AcquireFailure, Duration, Throwable)}. */
    default void onAcquireFailed(AcquisitionContext acquisition, AcquireFailure failure, Duration waited, Throwable error) {
        onAcquireFailed(acquisition.lockName(), acquisition.key(), failure, waited, error);
    }

    /** The outermost release of a lock held for {@code held}. */
    default void onReleased(String lockName, String key, Duration held) {
    }

    /**
     * The outermost release of the lock {@code acquisition} took, its last event (a loss found at the release is
     * reported just before it); calls {@link #onReleased(String, String, Duration)}.
     */
    default void onReleased(AcquisitionContext acquisition, Duration held) {
        onReleased(acquisition.lockName(), acquisition.key(), held);
    }

    /** One lease renewal attempt by the watchdog finished with {@code outcome}. */
    default void onRenewal(String lockName, String key, RenewalOutcome outcome) {
    }

    /** The lease was lost while held; {@code reason} says how. */
    default void onLeaseLost(String lockName, String key, String reason) {
    }

    /** The lease {@code acquisition} took was lost while held; calls {@link #onLeaseLost(String, String, String)}. */
    default void onLeaseLost(AcquisitionContext acquisition, String reason) {
        onLeaseLost(acquisition.lockName(), acquisition.key(), reason);
    }

    /**
     * Two call paths of this JVM took locks {@code lockName} and {@code otherLockName} (alphabetical order) nested in
     * opposite orders: a potential deadlock. Reported once per pair, right after the WARN that names both call sites.
     */
    default void onLockOrderInversion(String lockName, String otherLockName) {
    }

    /**
     * An operator's forced release ({@link LockAdmin#forceRelease(String, String)}) freed {@code key} of lock
     * {@code lockName} in the store, removing {@code holders} (whichever instances held it; empty when it was free).
     * Reported by the manager that ordered it; each removed holder learns of it as a lost lease.
     */
    default void onForcedRelease(String lockName, String key, List<LockHolder> holders) {
    }

    /** Why an acquisition failed. */
    enum AcquireFailure {
        /** The wait time passed. */
        TIMEOUT,
        /** The abort condition became true. */
        ABORTED,
        /** The thread was interrupted while waiting. */
        INTERRUPTED,
        /** The store failed. */
        ERROR
    }

    /** What one renewal attempt did for one lease. */
    enum RenewalOutcome {
        /** The lease was extended. */
        RENEWED,
        /** The store said the lease is gone or owned by someone else. */
        LOST,
        /** The store could not be reached; the watchdog retries until the lease has surely run out. */
        ERROR
    }
}
