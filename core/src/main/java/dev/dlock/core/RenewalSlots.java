package dev.dlock.core;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;

/**
 * When each watchdog-managed lease is due: leases wait in time slots of {@value #SLOT_MILLIS} ms, and the
 * {@link DelayQueue} holds one entry per slot, not per lease, so cancelling a lease is an O(1) removal from its slot
 * and released leases never pile up in the queue. A slot the {@link Watchdog} took is closed: a lease scheduled into it
 * meanwhile goes to a fresh slot of the same time. A lease is in one slot at most ({@code Lease.slot}, written under
 * the slot's monitor; callers hold the lease's monitor or own the lease exclusively).
 */
final class RenewalSlots {

    static final long SLOT_MILLIS = 10;
    static final long SLOT_NANOS = TimeUnit.MILLISECONDS.toNanos(SLOT_MILLIS);

    private final DelayQueue<Slot> queue = new DelayQueue<>();
    private final ConcurrentSkipListMap<Long, Slot> slots = new ConcurrentSkipListMap<>();
    /** The slot scheduled into last: acquisitions of one 10 ms window all go there, without a look-up in {@link #slots}. */
    private volatile Slot lastUsed;

    /** Queues {@code lease} for {@code dueNanos}, out of the slot it waited in. */
    void schedule(Lease lease, long dueNanos) {
        cancel(lease);
        long index = Math.floorDiv(dueNanos, SLOT_NANOS);
        Slot last = lastUsed;
        // A closed slot refuses the lease, which then takes the way through the map.
        if (last != null && last.index() == index && last.add(lease)) {
            return;
        }
        while (true) {
            Slot slot = slots.computeIfAbsent(index, this::newSlot);
            if (slot.add(lease)) {
                lastUsed = slot;
                return;
            }
            // The watchdog took this slot a moment ago; drop it so the next round creates a fresh one.
            slots.remove(index, slot);
        }
    }

    private Slot newSlot(long index) {
        Slot slot = new Slot(index);
        queue.add(slot);
        return slot;
    }

    /** Takes a lease out of its slot, so it is never due again unless scheduled anew. */
    void cancel(Lease lease) {
        Slot slot = lease.slot;
        if (slot != null) {
            slot.remove(lease);
        }
    }

    /** Waits up to {@code timeoutNanos} for a slot to fall due; the leases of every slot due by then (empty when none). */
    List<Lease> takeDue(long timeoutNanos) throws InterruptedException {
        Slot first = queue.poll(timeoutNanos, TimeUnit.NANOSECONDS);
        if (first == null) {
            return List.of();
        }
        List<Slot> due = new ArrayList<>();
        due.add(first);
        queue.drainTo(due);
        List<Lease> leases = new ArrayList<>();
        for (Slot slot : due) {
            slots.remove(slot.index(), slot);
            slot.closeInto(leases);
        }
        return leases;
    }

    /** Moves up to {@code missing} leases due by {@code horizonNanos} into {@code leases}, earliest first. */
    void takeEarly(List<Lease> leases, int missing, long horizonNanos) {
        long horizon = Math.floorDiv(horizonNanos, SLOT_NANOS);
        for (Slot slot : slots.headMap(horizon, true).values()) {
            missing -= slot.takeInto(leases, missing);
            if (missing == 0) {
                return;
            }
        }
    }

    /** Leases due in one {@value #SLOT_MILLIS} ms time slot; one DelayQueue entry. */
    static final class Slot implements Delayed {
        /** Which {@value #SLOT_MILLIS} ms window of System.nanoTime the slot is: due at its start. */
        private final long index;
        private final LinkedHashSet<Lease> leases = new LinkedHashSet<>();
        private boolean closed;

        Slot(long index) {
            this.index = index;
        }

        long index() {
            return index;
        }

        private long dueNanos() {
            return index * SLOT_NANOS;
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
            return unit.convert(dueNanos() - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed other) {
            return Long.compare(index, ((Slot) other).index);
        }
    }
}
