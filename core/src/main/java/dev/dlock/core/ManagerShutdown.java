package dev.dlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The end of a {@link LockManager}: holds still running get a grace period to end by themselves (woken by each
 * release, never polling), then every lease still held is released in the store through the normal release path and
 * reported lost to its holder, whose later {@code close()} then sends nothing more. Like Curator closing its client:
 * a deploy frees its keys at once instead of leaving them to their leases, and the store client is no longer needed
 * once {@link #run} returns. One per manager; runs once, whoever calls it first.
 */
final class ManagerShutdown {

    private static final Logger log = LoggerFactory.getLogger(ManagerShutdown.class);

    /**
     * How long the sweep after the grace period sends releases: each is retried for up to 2 s while the store does not
     * answer, so a store that is down would otherwise hold {@code close()} for 2 s per lock (a deploy's termination
     * grace period is often 30 s). Leases still held when it ends are not sent, and expire in the store.
     */
    static final long SWEEP_BUDGET_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final LockManager manager;
    private final AtomicBoolean started = new AtomicBoolean();
    private final CountDownLatch done = new CountDownLatch(1);
    /** Notified on every lease that ends while the manager closes; guards {@link #leasesEnded}. */
    private final Object monitor = new Object();
    private long leasesEnded;
    /** The leases this shutdown released in the store (or is releasing): their holders' release sends nothing. */
    private final Set<Lease> freed = ConcurrentHashMap.newKeySet();
    /** True once the grace period is over: a lease published from now on is freed at once. */
    private volatile boolean sweeping;
    private volatile long gracePeriodMillis;
    /** The thread running the shutdown, once it started. */
    private volatile Thread closingThread;
    /** Store calls under way that may grant a key (acquisitions, hand-offs): {@link #run} returns only after them. */
    private final AtomicInteger grantsInFlight = new AtomicInteger();

    ManagerShutdown(LockManager manager) {
        this.manager = manager;
    }

    /**
     * Waits up to {@code gracePeriod} for the holds of other threads to end, then frees what is still held; the
     * caller has already refused new acquisitions. A second caller waits for the first one to finish, unless it is a
     * listener closing the manager again on the first one's thread or on the events thread: it returns at once.
     */
    void run(Duration gracePeriod, Runnable beforeGrace, Runnable afterSweep) {
        if (!started.compareAndSet(false, true)) {
            // A listener may close the manager again: told of a lease this shutdown frees, on this very thread, where
            // waiting for the outer call would wait for itself; or on the events thread, which the shutdown waits for.
            if (Thread.currentThread() != closingThread && !manager.backgroundEvents.onEventsThread()) {
                awaitDone();
            }
            return;
        }
        closingThread = Thread.currentThread();
        try {
            gracePeriodMillis = gracePeriod.toMillis();
            beforeGrace.run();
            awaitReleases(System.nanoTime() + gracePeriod.toNanos());
            sweeping = true;
            int released = 0;
            int leftToExpire = 0;
            long sweepEnd = System.nanoTime() + SWEEP_BUDGET_NANOS;
            List<Lease> releasing = new ArrayList<>();
            for (Lease lease : manager.gates.held()) {
                boolean inTime = System.nanoTime() - sweepEnd < 0;
                if (free(lease, inTime)) {
                    if (inTime) {
                        released++;
                    } else {
                        leftToExpire++;
                    }
                } else if (lease.recordedState() == LockState.RELEASED) {
                    // Its holder's release is under way: its store call ends before the lease leaves its gate.
                    releasing.add(lease);
                }
            }
            // A store call still under way: a grant is given back, or freed as it is recorded (heldWhileClosing); a
            // holder's release or hand-off ends. The client may be closed once close() returns.
            if (!awaitStoreCalls(releasing, sweepEnd)) {
                log.warn("dlock lock manager closed while {} acquisition(s) and releases still waited for the store after "
                        + "the sweep's {} ms; a key they take or keep expires after its lease", grantsInFlight.get()
                        + releasing.size(), TimeUnit.NANOSECONDS.toMillis(SWEEP_BUDGET_NANOS));
            }
            // Owners that failed acquisitions may have left in the store are released once more now: the watchdog's
            // threads that would have done it stop with the manager.
            int freedAgain = manager.unknownAttempts.releaseAllOnce(sweepEnd);
            if (freedAgain > 0) {
                log.warn("dlock lock manager closed: freed {} key(s) that acquisitions which had failed (their outcome "
                        + "unknown) took in the store after their clients gave up", freedAgain);
            }
            if (released > 0) {
                log.warn("dlock lock manager closed: released {} lock(s) still held after the grace period of {} ms; "
                        + "their holders are told the leases are lost", released, gracePeriodMillis);
            }
            if (leftToExpire > 0) {
                log.warn("dlock lock manager closed: {} more lock(s) were not released in the store, whose releases had "
                        + "taken the sweep's {} ms already (is the store down?); they expire after their leases, and "
                        + "their holders are told the leases are lost", leftToExpire, TimeUnit.NANOSECONDS.toMillis(SWEEP_BUDGET_NANOS));
            }
        } finally {
            try {
                afterSweep.run();
            } finally {
                done.countDown();
            }
        }
    }

    /** A store call that may grant a key started; see {@link LockManager#grantStarting}. */
    void grantStarted() {
        grantsInFlight.incrementAndGet();
    }

    /** A store call counted by {@link #grantStarted} settled; the shutdown's wait looks again. */
    void grantSettled() {
        if (grantsInFlight.decrementAndGet() == 0 && started.get()) {
            leaseEnded();
        }
    }

    /**
     * Waits until no store call that may grant a key is under way and every lease of {@code releasing} left its gate
     * (its holder's release ended), or until {@code deadline}; true when all ended in time. Drops the leases that left.
     */
    private boolean awaitStoreCalls(List<Lease> releasing, long deadline) {
        synchronized (monitor) {
            while (true) {
                // A release removes its lease from the gate before it wakes this wait (leaveGate), under this monitor.
                releasing.removeIf(lease -> !lease.gate.holders.contains(lease));
                if (grantsInFlight.get() == 0 && releasing.isEmpty()) {
                    return true;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(monitor, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
    }

    /** Called whenever a lease ends (and an acquisition leaves its gate) while the manager closes. */
    void leaseEnded() {
        synchronized (monitor) {
            leasesEnded++;
            monitor.notifyAll();
        }
    }

    /**
     * A lease recorded while the manager closes: a hand-off begun before the close, whose successor records the key
     * (an acquisition's own grant is given back instead): freed at once after the grace period.
     */
    void heldWhileClosing(Lease lease) {
        if (sweeping && free(lease, true)) {
            log.warn("dlock: {} was granted while the lock manager was closing; released it again", lease);
        }
    }

    /** Whether this shutdown released {@code lease} in the store, so that its holder's release sends nothing more. */
    boolean freedInStore(Lease lease) {
        return freed.contains(lease);
    }

    /**
     * Waits until no other thread's lease is left in the manager or the deadline passes. Leases of the closing
     * thread are not awaited: it cannot release them while it waits here.
     */
    private void awaitReleases(long deadline) {
        Thread closing = Thread.currentThread();
        List<Lease> pending = List.of();
        int next = 0;
        while (true) {
            long seen;
            synchronized (monitor) {
                seen = leasesEnded;
            }
            // Read after the count: a lease ending from now on wakes the wait below.
            while (next < pending.size() && !stillHeld(pending.get(next), closing)) {
                next++;
            }
            if (next == pending.size()) {
                // Read before the leases: a grant under way settles only once its lease is published.
                boolean grantsUnderWay = grantsInFlight.get() > 0;
                // Leases taken since the last look (a hand-off under way at close) count too.
                pending = manager.gates.held().stream().filter(lease -> stillHeld(lease, closing)).toList();
                next = 0;
                if (pending.isEmpty() && !grantsUnderWay) {
                    return;
                }
                long leftMillis = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (!pending.isEmpty()) {
                    if (leftMillis > 0) {
                        log.info("dlock lock manager closing: waiting up to {} ms for {} held lock(s) to be released",
                                leftMillis, pending.size());
                    }
                    continue;
                }
                // Only store calls under way: each settles soon (refused, given back, or recorded), and wakes the wait.
            }
            synchronized (monitor) {
                while (leasesEnded == seen) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return;
                    }
                    try {
                        TimeUnit.NANOSECONDS.timedWait(monitor, left);
                    } catch (InterruptedException e) {
                        // The caller is in a hurry: what is still held is freed now.
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }
    }

    /** Whether {@code lease} is still in its gate (its holder has not finished releasing it) and not the closing thread's. */
    private static boolean stillHeld(Lease lease, Thread closing) {
        boolean inGate = lease.gate.holders.contains(lease);
        return inGate && lease.ownerThread != closing;
    }

    /**
     * Releases {@code lease} in the store (unless {@code send} is false: the sweep's time is up, and the key is left to
     * expire after its lease) and reports it lost, unless its holder released it first; true when this call ended it.
     * The claim and the holder's last {@code dropHold} exclude each other on the lease's monitor: either the holder's
     * release runs as usual, or it finds the lease here and sends nothing.
     */
    private boolean free(Lease lease, boolean send) {
        boolean newlyLost;
        synchronized (lease) {
            if (lease.recordedState() == LockState.RELEASED || !freed.add(lease)) {
                return false;
            }
            // Lost before the store lets the key go: the holder never sees "held" while another owner may have the key.
            newlyLost = lease.markLost(send
                    ? "the lock manager was closed while the lock was held, and released it in the store after its grace "
                            + "period of " + gracePeriodMillis + " ms: the critical section may still be running"
                    : "the lock manager was closed while the lock was held, and had no time left to release it in the "
                            + "store: the key expires after its lease, and the critical section may still be running");
        }
        if (newlyLost && lease.watched) {
            manager.watchedLeases.decrementAndGet();
        }
        if (send) {
            // As a holder's release: a closing thread with its interrupt status set still frees the key.
            boolean interruptedBefore = LeaseRelease.putInterruptAside();
            try {
                // The normal path: owner-checked, retried while the outcome is unknown, lockAtLeastFor kept.
                manager.releases.releaseInStore(lease);
            } catch (RuntimeException e) {
                log.warn("dlock could not release {} while closing the lock manager; it expires in the store after its "
                        + "lease", lease, e);
            } finally {
                LeaseRelease.restoreInterrupt(interruptedBefore);
            }
        }
        if (newlyLost) {
            manager.losses.reportLost(lease, false);
        }
        return true;
    }

    /** Waits for the shutdown another thread runs; an interrupt ends the wait and is kept. */
    private void awaitDone() {
        try {
            done.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
