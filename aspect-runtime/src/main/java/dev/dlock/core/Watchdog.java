package dev.dlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The one thread that keeps watchdog-managed leases alive.
 *
 * <p>Leases wait in time slots of {@value #SLOT_MILLIS} ms; the {@link DelayQueue} holds one entry
 * per slot, not per lease, so cancelling a lease is an O(1) removal from its slot and released
 * leases never pile up in the queue. When slots fall due the thread drains every due slot, tops up
 * the last partial batch with leases due soon (renewing early is harmless, and it keeps the number
 * of store calls per round near leases / batch size), and renews them in batches that never mix
 * {@link LockBackend#renewalGroup renewal groups}.
 */
final class Watchdog {

    private static final Logger log = LoggerFactory.getLogger(Watchdog.class);
    static final long SLOT_MILLIS = 10;
    private static final long SLOT_NANOS = TimeUnit.MILLISECONDS.toNanos(SLOT_MILLIS);
    private static final long MAX_RETRY_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final LockManager manager;
    private final LockBackend backend;
    private final int batchSize;
    private final long coalesceNanos;
    private final DelayQueue<Slot> queue = new DelayQueue<>();
    private final ConcurrentSkipListMap<Long, Slot> slots = new ConcurrentSkipListMap<>();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong renewCalls = new AtomicLong();
    private final Thread thread;
    private volatile boolean running = true;

    Watchdog(LockManager manager, LockBackend backend, int batchSize, long coalesceNanos, String threadName) {
        this.manager = manager;
        this.backend = backend;
        this.batchSize = batchSize;
        this.coalesceNanos = coalesceNanos;
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** Queues {@code lease} for renewal at {@code dueNanos}; the caller holds the lease's monitor or owns it exclusively. */
    void schedule(Lease lease, long dueNanos) {
        long index = Math.floorDiv(dueNanos, SLOT_NANOS);
        while (true) {
            Slot slot = slots.computeIfAbsent(index, this::newSlot);
            if (slot.add(lease)) {
                return;
            }
            // The watchdog took this slot a moment ago; drop it so the next round creates a fresh one.
            slots.remove(index, slot);
        }
    }

    private Slot newSlot(long index) {
        Slot slot = new Slot(index * SLOT_NANOS);
        queue.add(slot);
        return slot;
    }

    /** Takes a released lease out of its slot, so it is never renewed again. */
    void cancel(Lease lease) {
        Slot slot = lease.slot;
        if (slot != null) {
            slot.remove(lease);
        }
    }

    long errors() {
        return errors.get();
    }

    int stalledCalls() {
        return 0;
    }

    long stallCount() {
        return 0;
    }

    long renewCalls() {
        return renewCalls.get();
    }

    void stop() {
        running = false;
        thread.interrupt();
        try {
            thread.join(TimeUnit.SECONDS.toMillis(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        while (running) {
            try {
                List<Slot> due = new ArrayList<>();
                due.add(queue.take());
                queue.drainTo(due);
                List<Lease> leases = new ArrayList<>();
                for (Slot slot : due) {
                    slots.remove(slot.index(), slot);
                    slot.closeInto(leases);
                }
                topUp(leases);
                renew(leases);
            } catch (InterruptedException e) {
                if (!running) {
                    return;
                }
            } catch (Throwable t) {
                // The only thread that keeps leases alive must outlive any bug or store failure.
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
        long horizon = Math.floorDiv(System.nanoTime() + coalesceNanos, SLOT_NANOS);
        for (Slot slot : slots.headMap(horizon, true).values()) {
            missing -= slot.takeInto(leases, missing);
            if (missing == 0) {
                return;
            }
        }
    }

    private void renew(List<Lease> leases) {
        Map<Object, List<Lease>> groups = new LinkedHashMap<>();
        for (Lease lease : leases) {
            if (lease.state == LockState.HELD) {
                groups.computeIfAbsent(lease.renewalGroup, g -> new ArrayList<>()).add(lease);
            }
        }
        for (List<Lease> group : groups.values()) {
            for (int from = 0; from < group.size(); from += batchSize) {
                renewBatch(group.subList(from, Math.min(group.size(), from + batchSize)));
            }
        }
    }

    private void renewBatch(List<Lease> batch) {
        List<LeaseRenewal> requests = new ArrayList<>(batch.size());
        for (Lease lease : batch) {
            requests.add(new LeaseRenewal(lease.key, lease.owner, lease.leaseMillis));
        }
        long sentAt = System.nanoTime();
        List<RenewalResult> results;
        try {
            renewCalls.incrementAndGet();
            results = backend.renew(requests);
            if (results.size() != batch.size()) {
                throw new IllegalStateException("backend answered " + results.size() + " results for " + batch.size() + " renewals");
            }
        } catch (RuntimeException e) {
            errors.incrementAndGet();
            log.warn("dlock watchdog could not renew {} leases; retrying until each lease has surely run out", batch.size(), e);
            for (Lease lease : batch) {
                retryOrGiveUp(lease, e);
            }
            return;
        }
        for (int i = 0; i < batch.size(); i++) {
            Lease lease = batch.get(i);
            switch (results.get(i)) {
                case RENEWED -> {
                    if (rescheduleRenewed(lease, sentAt)) {
                        manager.renewalOutcome(lease, LockListener.RenewalOutcome.RENEWED);
                    }
                }
                case EXPIRED -> manager.leaseLost(lease, "the key expired or was deleted in the store");
                case TAKEN -> manager.leaseLost(lease, "the key is held by another owner");
            }
        }
    }

    private void retryOrGiveUp(Lease lease, RuntimeException error) {
        long now = System.nanoTime();
        if (now - lease.expiresAtNanos >= 0) {
            manager.leaseLost(lease, "renewals failed until the lease ran out (" + error.getMessage() + ")");
            return;
        }
        long retryAt = now + Math.min(MAX_RETRY_NANOS, lease.renewalIntervalNanos() / 3);
        synchronized (lease) {
            if (lease.state == LockState.HELD) {
                schedule(lease, Math.min(retryAt, lease.expiresAtNanos));
            }
        }
        manager.renewalOutcome(lease, LockListener.RenewalOutcome.ERROR);
    }

    private boolean rescheduleRenewed(Lease lease, long sentAt) {
        synchronized (lease) {
            if (!lease.renewed(sentAt)) {
                return false;
            }
            schedule(lease, sentAt + lease.renewalIntervalNanos());
            return true;
        }
    }

    /** Leases due in one {@value #SLOT_MILLIS} ms time slot; one DelayQueue entry. */
    static final class Slot implements Delayed {
        private final long dueNanos;
        private final LinkedHashSet<Lease> leases = new LinkedHashSet<>();
        private boolean closed;

        Slot(long dueNanos) {
            this.dueNanos = dueNanos;
        }

        long index() {
            return Math.floorDiv(dueNanos, SLOT_NANOS);
        }

        synchronized boolean add(Lease lease) {
            if (closed) {
                return false;
            }
            leases.add(lease);
            lease.slot = this;
            return true;
        }

        synchronized void remove(Lease lease) {
            if (leases.remove(lease)) {
                lease.slot = null;
            }
        }

        synchronized void closeInto(List<Lease> out) {
            closed = true;
            takeInto(out, leases.size());
        }

        synchronized int takeInto(List<Lease> out, int max) {
            int taken = 0;
            for (Iterator<Lease> it = leases.iterator(); it.hasNext() && taken < max; taken++) {
                Lease lease = it.next();
                it.remove();
                lease.slot = null;
                out.add(lease);
            }
            return taken;
        }

        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(dueNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(dueNanos, ((Slot) other).dueNanos);
        }
    }
}
