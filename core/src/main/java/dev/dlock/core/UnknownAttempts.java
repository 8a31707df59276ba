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
 * owner is released again on a renewer thread of the watchdog (so a store that does not answer never holds up the
 * watchdog's scheduling thread): first about when a late command lands — as long after the failure as the failed
 * call took, which is about the client's timeout — then at doubling pauses up to a renewal period (a third of the
 * lease it asked for). Waiters elsewhere then lose about a client timeout to a late command, not a third of a lease.
 *
 * <p>The same rounds release a lost lease's owner in the background ({@link #releaseLost}): its holder's release
 * returns at once instead of waiting for a store that may be down, and the first answer ends it.
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
    /** The shortest pause before the first release again: the watchdog's round serves them about every 100 ms anyway. */
    static final long FIRST_RELEASE_MIN_NANOS = TimeUnit.MILLISECONDS.toNanos(10);
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
     * A command for {@code owner} on {@code key} (an acquisition for {@code storeLeaseMillis}, or one that hands a key
     * to that owner) failed with its outcome unknown, or took a key nobody will keep: the owner is released again soon,
     * then at doubling pauses. The owner must never be used for another attempt.
     */
    void add(LockKind kind, String key, String owner, long storeLeaseMillis) {
        add(kind, key, owner, storeLeaseMillis, 0);
    }

    /**
     * {@link #add(LockKind, String, String, long)} for a call that failed after {@code callNanos}: a command that
     * reached the store late lands within about that long, so the first release again is due then.
     */
    void add(LockKind kind, String key, String owner, long storeLeaseMillis, long callNanos) {
        queue(kind, key, owner, storeLeaseMillis, callNanos, sessionKept);
    }

    /**
     * Releases the owner of a lease already reported lost, in the background: its holder's release does not wait for a
     * store that may be down. Sent until the store answers once, or until the lease has passed.
     */
    void releaseLost(LockKind kind, String key, String owner, long storeLeaseMillis) {
        queue(kind, key, owner, storeLeaseMillis, 0, true);
    }

    private void queue(LockKind kind, String key, String owner, long storeLeaseMillis, long callNanos, boolean endsOnAnswer) {
        long now = System.nanoTime();
        long period = storeLeaseMillis == SessionLeases.UNTIL_RELEASED ? untilReleasedPeriodNanos
                : Math.max(1, TimeUnit.MILLISECONDS.toNanos(storeLeaseMillis) / 3);
        // A session-keeping store keeps an orphan as long as the session lives: only an answer ends its rounds.
        long end = sessionKept || storeLeaseMillis == SessionLeases.UNTIL_RELEASED ? Long.MAX_VALUE
                : now + TimeUnit.MILLISECONDS.toNanos(storeLeaseMillis);
        long first = Math.min(period, Math.max(FIRST_RELEASE_MIN_NANOS, callNanos));
        Unknown unknown = new Unknown(kind, key, owner, period, end, endsOnAnswer, first, now + first);
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
                boolean answered = releaseOnce(due) != null;
                long now = System.nanoTime();
                if (due.endsOnAnswer && answered || due.endNanos != Long.MAX_VALUE && now - due.endNanos >= 0) {
                    continue;
                }
                due.pauseNanos = Math.min(due.periodNanos, 2 * due.pauseNanos);
                // The last round exactly at the end: a command that landed just before it is freed too.
                due.dueNanos = due.endNanos != Long.MAX_VALUE && now + due.pauseNanos - due.endNanos > 0
                        ? due.endNanos : now + due.pauseNanos;
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

    /**
     * Releases every owner still waiting once, on the calling thread (the manager's close, before the watchdog's threads
     * stop), until {@code deadlineNanos}; returns how many the store freed. What is left, or lands later, expires with
     * its lease.
     */
    int releaseAllOnce(long deadlineNanos) {
        int freed = 0;
        while (System.nanoTime() - deadlineNanos < 0) {
            Unknown next;
            synchronized (pending) {
                next = pending.poll();
                size = pending.size();
            }
            if (next == null) {
                break;
            }
            freed += releaseOnce(next) == ReleaseResult.RELEASED ? 1 : 0;
        }
        return freed;
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

    /**
     * One release (and withdrawal, for a place the command may have queued): what the store answered, null when it did
     * not answer.
     */
    private ReleaseResult releaseOnce(Unknown unknown) {
        ReleaseResult result;
        try {
            result = backend.release(unknown.kind, unknown.key, unknown.owner, AcquireResult.Acquired.TOKEN_ON_REQUEST);
        } catch (RuntimeException e) {
            log.debug("dlock could not release key '{}' again after an acquisition whose outcome is unknown: {}",
                    unknown.key, e.toString());
            return null;
        }
        try {
            backend.withdraw(unknown.kind, unknown.key, unknown.owner);
        } catch (RuntimeException e) {
            // The SPI says it never throws; a store's bug must not end the rounds of the other owners.
            log.debug("dlock could not withdraw owner of key '{}' after an unknown attempt: {}", unknown.key, e.toString());
        }
        if (result == ReleaseResult.RELEASED && !unknown.endsOnAnswer) {
            log.info("dlock freed key '{}': an acquisition that had failed reached the store after its client gave up "
                    + "on it, and took the key for nobody", unknown.key);
        }
        return result;
    }

    /** One owner to release again. */
    private static final class Unknown implements Comparable<Unknown> {
        final LockKind kind;
        final String key;
        final String owner;
        /** The longest pause between two rounds. */
        final long periodNanos;
        /** When the rounds end whatever the store answers; {@link Long#MAX_VALUE} for never (only an answer ends them). */
        final long endNanos;
        /** Whether the store's first answer ends the rounds. */
        final boolean endsOnAnswer;
        /** The pause before this round; doubled after each, up to the period. */
        long pauseNanos;
        long dueNanos;

        Unknown(LockKind kind, String key, String owner, long periodNanos, long endNanos, boolean endsOnAnswer,
                long pauseNanos, long dueNanos) {
            this.kind = kind;
            this.key = key;
            this.owner = owner;
            this.periodNanos = periodNanos;
            this.endNanos = endNanos;
            this.endsOnAnswer = endsOnAnswer;
            this.pauseNanos = pauseNanos;
            this.dueNanos = dueNanos;
        }

        @Override
        public int compareTo(Unknown other) {
            return Long.compare(dueNanos - other.dueNanos, 0);
        }
    }
}
