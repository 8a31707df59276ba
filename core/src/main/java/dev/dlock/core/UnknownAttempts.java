package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.SessionLeases;
import java.util.PriorityQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owners of acquisition attempts whose outcome is unknown, released again until they surely hold nothing. A store
 * command can land after its client gave up on it (a slow network, a stalled server): the acquisition failed, and its
 * best-effort release may have run before the command, leaving the key taken for an owner no holder has. Each such
 * owner is released again about once a renewal period (a third of the lease it asked for), on a renewer thread of
 * the watchdog, so a store that does not answer never holds up the watchdog's scheduling thread.
 *
 * <p>On a store whose leases expire by themselves the releases go on until the lease has passed since the failure was
 * seen, whatever they answer: "not held" proves nothing while the command may still be on its way; a command that
 * lands within that time is freed within one period, one that lands later holds the key at most its lease. On a store
 * that keeps leases by its session (ZooKeeper) the first answer ends it: the store runs a session's requests in order,
 * and its backend deletes a node whose create was cut by its own tag, or the session takes it.
 *
 * <p>Bounded: at most {@value #MAX_PENDING} owners wait; more are dropped, with a WARN, and their keys free themselves
 * when their leases run out.
 */
final class UnknownAttempts {

    private static final Logger log = LoggerFactory.getLogger(UnknownAttempts.class);

    /** The most owners waiting to be released again; far more than a JVM's acquisitions fail within one lease. */
    static final int MAX_PENDING = 10_000;
    private static final long DROP_WARNING_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final LockBackend backend;
    private final boolean sessionKept;
    /** A third of the watchdog lease: the period of a watchdog lease on a session-keeping store, which has no end. */
    private final long untilReleasedPeriodNanos;
    /** Guarded by itself; ordered by when each is due. */
    private final PriorityQueue<Unknown> pending = new PriorityQueue<>();
    /** The queue's size, read without its lock by the watchdog's every round. */
    private volatile int size;
    /** Guarded by {@link #pending}: a renewer thread is releasing due owners. */
    private boolean serving;
    /** Guarded by {@link #pending}. */
    private long dropped;
    private long lastDropWarning;

    UnknownAttempts(LockBackend backend, boolean sessionKept, long watchdogLeaseMillis) {
        this.backend = backend;
        this.sessionKept = sessionKept;
        this.untilReleasedPeriodNanos = TimeUnit.MILLISECONDS.toNanos(watchdogLeaseMillis) / 3;
    }

    /**
     * An attempt of {@code owner} to take {@code key} for {@code storeLeaseMillis} failed with its outcome unknown: it
     * is released again from one period on. The owner must never be used for another attempt.
     */
    void add(LockKind kind, String key, String owner, long storeLeaseMillis) {
        long now = System.nanoTime();
        long period = storeLeaseMillis == SessionLeases.UNTIL_RELEASED ? untilReleasedPeriodNanos
                : Math.max(1, TimeUnit.MILLISECONDS.toNanos(storeLeaseMillis) / 3);
        // Unused on a session-keeping store, which keeps an orphan as long as the session lives: only an answer ends it.
        long end = sessionKept ? now : now + TimeUnit.MILLISECONDS.toNanos(storeLeaseMillis);
        Unknown unknown = new Unknown(kind, key, owner, period, end, now + period);
        long droppedNow = 0;
        synchronized (pending) {
            if (pending.size() >= MAX_PENDING) {
                dropped++;
                if (lastDropWarning == 0 || now - lastDropWarning > DROP_WARNING_NANOS) {
                    lastDropWarning = now;
                    droppedNow = dropped;
                    dropped = 0;
                }
            } else {
                pending.add(unknown);
                size = pending.size();
            }
        }
        if (droppedNow > 0) {
            log.warn("dlock: {} failed acquisitions (the last of key '{}') could not be queued to be released again: {} "
                    + "are waiting already; if their commands reached the store late, those keys stay taken until their "
                    + "leases run out", droppedNow, key, MAX_PENDING);
        }
    }

    /** How many owners wait to be released again. */
    int size() {
        return size;
    }

    /** Called by the watchdog's scheduling thread every round: starts releasing due owners on {@code executor}. */
    void serveDue(Executor executor) {
        if (size == 0) {
            return;
        }
        synchronized (pending) {
            Unknown first = pending.peek();
            if (serving || first == null || first.dueNanos - System.nanoTime() > 0) {
                return;
            }
            serving = true;
        }
        try {
            executor.execute(this::releaseDue);
        } catch (RejectedExecutionException e) {
            // The manager is closing: the keys free themselves when their leases run out.
            synchronized (pending) {
                serving = false;
            }
        }
    }

    /** Releases every due owner once, one store call at a time, and queues each for its next round unless it is done. */
    private void releaseDue() {
        try {
            Unknown due;
            while ((due = nextDue()) != null) {
                boolean answered = releaseOnce(due);
                long now = System.nanoTime();
                if (sessionKept ? answered : now - due.endNanos >= 0) {
                    continue;
                }
                // The last round exactly at the end: a command that landed just before it is freed too.
                due.dueNanos = !sessionKept && now + due.periodNanos - due.endNanos > 0 ? due.endNanos : now + due.periodNanos;
                synchronized (pending) {
                    pending.add(due);
                    size = pending.size();
                }
            }
        } finally {
            synchronized (pending) {
                serving = false;
            }
        }
    }

    private Unknown nextDue() {
        synchronized (pending) {
            Unknown first = pending.peek();
            if (first == null || first.dueNanos - System.nanoTime() > 0) {
                return null;
            }
            pending.poll();
            size = pending.size();
            return first;
        }
    }

    /** One release (and withdrawal, for a place the command may have queued); false when the store did not answer. */
    private boolean releaseOnce(Unknown unknown) {
        ReleaseResult result;
        try {
            result = backend.release(unknown.kind, unknown.key, unknown.owner, AcquireResult.Acquired.TOKEN_ON_REQUEST);
        } catch (RuntimeException e) {
            log.debug("dlock could not release key '{}' again after an acquisition whose outcome is unknown: {}",
                    unknown.key, e.toString());
            return false;
        }
        try {
            backend.withdraw(unknown.kind, unknown.key, unknown.owner);
        } catch (RuntimeException e) {
            // The SPI says it never throws; a store's bug must not end the rounds of the other owners.
            log.debug("dlock could not withdraw owner of key '{}' after an unknown attempt: {}", unknown.key, e.toString());
        }
        if (result == ReleaseResult.RELEASED) {
            log.info("dlock freed key '{}': an acquisition that had failed reached the store after its client gave up "
                    + "on it, and took the key for nobody", unknown.key);
        }
        return true;
    }

    /** One owner to release again. */
    private static final class Unknown implements Comparable<Unknown> {
        final LockKind kind;
        final String key;
        final String owner;
        final long periodNanos;
        final long endNanos;
        long dueNanos;

        Unknown(LockKind kind, String key, String owner, long periodNanos, long endNanos, long dueNanos) {
            this.kind = kind;
            this.key = key;
            this.owner = owner;
            this.periodNanos = periodNanos;
            this.endNanos = endNanos;
            this.dueNanos = dueNanos;
        }

        @Override
        public int compareTo(Unknown other) {
            return Long.compare(dueNanos - other.dueNanos, 0);
        }
    }
}
