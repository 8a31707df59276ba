package dev.dlock.core;

import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoreNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Keeps watchdog-managed leases alive: one scheduling thread that never waits on the store, and
 * renewal calls that run per store node, so that a stalled node delays only its own leases.
 *
 * <p>Leases wait in {@link RenewalSlots time slots} of {@value #SLOT_MILLIS} ms. When slots fall due the thread
 * drains every due slot, tops up
 * the last partial batch with leases due soon (renewing early is harmless, and it keeps the number
 * of store calls per round near leases / batch size), and hands them to their node's
 * {@link StoreNode store node}'s group. A group runs one call at a time on one of a bounded
 * set of renewer threads; leases that fall due meanwhile wait for that call to finish.
 *
 * <p>A lease handed to a call also waits in the slot of its expiry: if no answer confirmed a renewal
 * by then, the store may have let the key go, and the lease is reported lost at once instead of
 * whenever the stalled call returns. A call running longer than a third of the shortest lease it
 * carries is a stall: counted, logged, and visible through {@link #stalledCalls()}.
 */
final class Watchdog {

    private static final Logger log = LoggerFactory.getLogger(Watchdog.class);
    /** The length of a time slot, as {@link RenewalSlots#SLOT_MILLIS}. */
    static final long SLOT_MILLIS = RenewalSlots.SLOT_MILLIS;
    private static final long MAX_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** How often the scheduling thread looks for stalled calls when no slot falls due. */
    private static final long STALL_CHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** The most renewal calls in flight at once, across all nodes. */
    private static final int MAX_RENEWER_THREADS = 16;

    private final LockManager manager;
    private final LockBackend backend;
    private final int batchSize;
    private final long coalesceNanos;
    private final String threadName;
    private final RenewalSlots slots = new RenewalSlots();
    private final ConcurrentHashMap<StoreNode, Group> groups = new ConcurrentHashMap<>();
    private final ExecutorService renewers;
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong renewCalls = new AtomicLong();
    private final AtomicLong stalls = new AtomicLong();
    private final Object threadLock = new Object();
    private volatile Thread thread;
    private volatile boolean running = true;

    Watchdog(LockManager manager, LockBackend backend, int batchSize, long coalesceNanos, String threadName) {
        this.manager = manager;
        this.backend = backend;
        this.batchSize = batchSize;
        this.coalesceNanos = coalesceNanos;
        this.threadName = threadName;
        AtomicInteger renewerNumber = new AtomicInteger();
        // One call in flight per node; a bounded number of threads, so a backend with many groups
        // cannot flood its own connection pool. Idle threads go away.
        ThreadPoolExecutor pool = new ThreadPoolExecutor(MAX_RENEWER_THREADS, MAX_RENEWER_THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), task -> {
                    Thread renewer = new Thread(task, threadName + "-renewer-" + renewerNumber.incrementAndGet());
                    renewer.setDaemon(true);
                    return renewer;
                });
        pool.allowCoreThreadTimeOut(true);
        this.renewers = pool;
        startThread();
    }

    private void startThread() {
        Thread started = new Thread(this::run, threadName);
        started.setDaemon(true);
        thread = started;
        started.start();
    }

    /** Starts a new scheduling thread if the current one died; a lease must never be left without its watchdog. */
    void ensureRunning() {
        if (thread.isAlive() || !running) {
            return;
        }
        synchronized (threadLock) {
            if (!thread.isAlive() && running) {
                log.error("dlock watchdog thread {} had died; starting a new one", thread.getName());
                startThread();
            }
        }
    }

    /** Queues {@code lease} for renewal at {@code dueNanos}; the caller holds the lease's monitor or owns it exclusively. */
    void schedule(Lease lease, long dueNanos) {
        slots.schedule(lease, dueNanos);
    }

    /** Takes a lease out of its slot, so it is never renewed again unless scheduled anew. */
    void cancel(Lease lease) {
        slots.cancel(lease);
    }

    long errors() {
        return errors.get();
    }

    long renewCalls() {
        return renewCalls.get();
    }

    int stalledCalls() {
        long now = System.nanoTime();
        int stalled = 0;
        for (Group group : groups.values()) {
            if (group.stalledAt(now)) {
                stalled++;
            }
        }
        return stalled;
    }

    long stallCount() {
        return stalls.get();
    }

    void stop() {
        running = false;
        Thread current = thread;
        current.interrupt();
        renewers.shutdown();
        try {
            current.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        while (running) {
            try {
                List<Lease> leases = slots.takeDue(STALL_CHECK_NANOS);
                if (!leases.isEmpty()) {
                    topUp(leases);
                    dispatch(leases);
                }
                reportStalls();
                manager.unknownAttempts.serveDue(renewers);
            } catch (InterruptedException e) {
                if (!running) {
                    return;
                }
            } catch (Throwable t) {
                // The only thread that schedules renewals must outlive any bug.
                errors.incrementAndGet();
                log.error("dlock watchdog round failed; carrying on", t);
            }
        }
    }

    /** Fills the last partial batch with leases due within the coalescing window. */
    private void topUp(List<Lease> leases) {
        int missing = (batchSize - leases.size() % batchSize) % batchSize;
        if (missing == 0 || leases.isEmpty()) {
            return;
        }
        slots.takeEarly(leases, missing, System.nanoTime() + coalesceNanos);
    }

    /**
     * Sorts due leases: a lease waiting for a renewal answer has reached its expiry (lost unless
     * answered meanwhile); any other is handed to its node's group, and waits in its expiry's slot.
     */
    private void dispatch(List<Lease> leases) {
        long now = System.nanoTime();
        Map<StoreNode, List<Lease>> toRenew = new LinkedHashMap<>();
        for (Lease lease : leases) {
            boolean expired;
            synchronized (lease) {
                // Rescheduled since it was taken from its slot (a renewal answered), or no longer held.
                if (lease.slot != null || lease.recordedState() != LockState.HELD) {
                    continue;
                }
                expired = lease.renewing && !lease.surelyLive(now);
                if (!expired) {
                    if (!lease.renewing) {
                        lease.renewing = true;
                        toRenew.computeIfAbsent(lease.node, node -> new ArrayList<>()).add(lease);
                    }
                    scheduleExpiryCheck(lease);
                }
            }
            if (expired) {
                manager.losses.leaseLost(lease, lease.unconfirmedRenewalReason());
            }
        }
        for (Map.Entry<StoreNode, List<Lease>> entry : toRenew.entrySet()) {
            groups.computeIfAbsent(entry.getKey(), Group::new).offer(entry.getValue());
        }
    }

    /** Queues the check that reports a lease lost if no renewal answer arrived by its expiry (one slot late, never early). */
    private void scheduleExpiryCheck(Lease lease) {
        schedule(lease, lease.expiresAtNanos + RenewalSlots.SLOT_NANOS);
    }

    private void reportStalls() {
        long now = System.nanoTime();
        for (Group group : groups.values()) {
            group.reportStall(now);
        }
    }

    /** Renews one batch of one group, retrying a failed call once at once (a fresh connection), then later. */
    private void renewBatch(Group group, List<Lease> batch) {
        List<LeaseRenewal> requests = new ArrayList<>(batch.size());
        for (Lease lease : batch) {
            requests.add(new LeaseRenewal(lease.key, lease.owner, lease.leaseMillis, lease.kind));
        }
        long sentAt = System.nanoTime();
        List<RenewalResult> results;
        try {
            results = renewOnce(requests);
        } catch (RuntimeException first) {
            sentAt = System.nanoTime();
            try {
                results = renewOnce(requests);
            } catch (RuntimeException e) {
                e.addSuppressed(first);
                errors.incrementAndGet();
                log.warn("dlock watchdog could not renew {} leases of group '{}'; retrying until each lease has surely run out",
                        batch.size(), group.id, e);
                for (Lease lease : batch) {
                    retryOrGiveUp(lease, e);
                }
                return;
            }
        }
        List<Lease> renewed = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            Lease lease = batch.get(i);
            switch (results.get(i)) {
                case RENEWED -> {
                    if (rescheduleRenewed(lease, sentAt)) {
                        renewed.add(lease);
                    }
                }
                case EXPIRED -> lost(lease, "the key expired or was deleted in the store");
                case TAKEN -> lost(lease, "the key is held by another owner");
            }
        }
        manager.renewed(renewed);
    }

    private List<RenewalResult> renewOnce(List<LeaseRenewal> requests) {
        renewCalls.incrementAndGet();
        List<RenewalResult> results = backend.renew(requests);
        if (results.size() != requests.size()) {
            throw new IllegalStateException("backend answered " + results.size() + " results for " + requests.size() + " renewals");
        }
        return results;
    }

    private void lost(Lease lease, String reason) {
        synchronized (lease) {
            lease.renewalAnswered();
            cancel(lease);
        }
        manager.losses.leaseLost(lease, reason);
    }

    private void retryOrGiveUp(Lease lease, RuntimeException error) {
        long now = System.nanoTime();
        boolean expired;
        synchronized (lease) {
            lease.renewalAnswered();
            expired = !lease.surelyLive(now);
            if (!expired && lease.recordedState() == LockState.HELD) {
                long retryAt = now + Math.min(MAX_RETRY_NANOS, lease.renewalIntervalNanos() / 3);
                schedule(lease, Math.min(retryAt, lease.expiresAtNanos));
            }
        }
        if (expired) {
            lost(lease, "renewals failed until the lease ran out (" + error.getMessage() + ")");
            return;
        }
        manager.renewalOutcome(lease, LockListener.RenewalOutcome.ERROR);
    }

    private boolean rescheduleRenewed(Lease lease, long sentAt) {
        synchronized (lease) {
            lease.renewalAnswered();
            if (!lease.renewed(sentAt)) {
                cancel(lease);
                return false;
            }
            schedule(lease, sentAt + lease.renewalIntervalNanos());
            return true;
        }
    }

    /** The leases of one store node: at most one renewal call in flight, on a renewer thread. */
    private final class Group {
        final StoreNode id;
        private final LinkedHashSet<Lease> waiting = new LinkedHashSet<>();
        private boolean inFlight;
        private long callStartedAt;
        private long callBudgetNanos;
        private boolean stallReported;

        Group(StoreNode id) {
            this.id = id;
        }

        /** Queues leases for renewal and starts a call unless one is running. */
        void offer(List<Lease> leases) {
            synchronized (this) {
                waiting.addAll(leases);
                if (inFlight) {
                    return;
                }
                inFlight = true;
            }
            try {
                renewers.execute(this::drain);
            } catch (RuntimeException e) {
                // Shut down (manager closed) or no thread to be had: leave them to their expiry check.
                synchronized (this) {
                    inFlight = false;
                }
                throw e;
            }
        }

        private void drain() {
            boolean drained = false;
            try {
                List<Lease> batch;
                while ((batch = nextBatch()) != null) {
                    try {
                        renewBatch(this, batch);
                    } catch (Throwable t) {
                        // A bug or an Error in a store call must not leave its leases marked as being renewed.
                        errors.incrementAndGet();
                        log.error("dlock watchdog renewal call for group '{}' failed unexpectedly; its leases are retried", id, t);
                        RuntimeException failure = t instanceof RuntimeException e ? e : new IllegalStateException(t);
                        for (Lease lease : batch) {
                            retryOrGiveUp(lease, failure);
                        }
                    }
                }
                drained = true;
            } finally {
                if (!drained) {
                    synchronized (this) {
                        inFlight = false;
                    }
                }
            }
        }

        /** The next batch of held leases, or null (and no call in flight) when none wait. */
        private synchronized List<Lease> nextBatch() {
            if (callStartedAt != 0) {
                finishCall();
            }
            List<Lease> batch = new ArrayList<>(Math.min(batchSize, waiting.size()));
            long shortestLease = Long.MAX_VALUE;
            for (Iterator<Lease> it = waiting.iterator(); it.hasNext() && batch.size() < batchSize; ) {
                Lease lease = it.next();
                it.remove();
                if (lease.recordedState() == LockState.HELD) {
                    batch.add(lease);
                    shortestLease = Math.min(shortestLease, lease.renewalIntervalNanos());
                }
            }
            if (batch.isEmpty()) {
                inFlight = false;
                return null;
            }
            callStartedAt = System.nanoTime();
            callBudgetNanos = shortestLease;
            stallReported = false;
            return batch;
        }

        private void finishCall() {
            long took = System.nanoTime() - callStartedAt;
            if (took > callBudgetNanos) {
                if (!stallReported) {
                    stalls.incrementAndGet();
                }
                log.info("dlock watchdog renewal call for group '{}' returned after {} ms", id, TimeUnit.NANOSECONDS.toMillis(took));
            }
            callStartedAt = 0;
        }

        synchronized boolean stalledAt(long now) {
            return inFlight && callStartedAt != 0 && now - callStartedAt > callBudgetNanos;
        }

        void reportStall(long now) {
            long startedAt;
            synchronized (this) {
                if (stallReported || !stalledAt(now)) {
                    return;
                }
                stallReported = true;
                startedAt = callStartedAt;
            }
            stalls.incrementAndGet();
            log.warn("dlock watchdog: a renewal call for group '{}' has been waiting {} ms, longer than its leases can afford; "
                    + "leases of that node are reported lost when they run out, other nodes are renewed meanwhile",
                    id, TimeUnit.NANOSECONDS.toMillis(now - startedAt));
        }
    }
}
