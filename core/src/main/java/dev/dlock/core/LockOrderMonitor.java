package dev.dlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

/**
 * Learns the order in which the threads of one JVM nest lock names, and warns once per pair of names that two call
 * paths take in opposite orders: two such calls running at once can each hold one lock and wait for the other.
 *
 * <p>Keyed by the static lock name, never the key, so memory stays bounded: at most {@link #maxOrders} orders
 * ("B taken while A was held") are remembered; past that, new orders are no longer learned (one WARN says so), while
 * those already learned are still checked. Only nesting on one thread is seen: a lock taken with
 * {@link LockManager#acquireAsync}, or handed to a pending asynchronous result, takes no part. The same name nested
 * (several keys of one name, re-entry) is no inversion.
 */
final class LockOrderMonitor {

    private static final Logger log = LoggerFactory.getLogger(LockOrderMonitor.class);

    /** The most orders remembered when the manager sets no other bound. */
    static final int DEFAULT_MAX_ORDERS = 4096;

    private final int maxOrders;
    /** Per held name: the names taken while it was held, with who took them. */
    private final ConcurrentHashMap<String, ConcurrentHashMap<String, String>> orders = new ConcurrentHashMap<>();
    private final AtomicInteger orderCount = new AtomicInteger();
    private final Set<NamePair> warned = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean fullReported = new AtomicBoolean();
    /** Told of each inversion, with the two names in alphabetical order. */
    private final BiConsumer<String, String> inversions;
    private final ThreadLocal<Holds> holds = ThreadLocal.withInitial(Holds::new);

    LockOrderMonitor(int maxOrders, BiConsumer<String, String> inversions) {
        this.maxOrders = maxOrders;
        this.inversions = inversions;
    }

    /** The calling thread took {@code lease} (its outermost hold), at {@code callSite} (null when unknown). */
    void acquired(Lease lease, String callSite) {
        try {
            Holds mine = holds.get();
            Thread me = Thread.currentThread();
            mine.forgetNotHeldBy(me);
            for (int i = 0; i < mine.size; i++) {
                String held = mine.leases[i].lockName;
                if (!held.equals(lease.lockName)) {
                    recordOrder(held, mine.sites[i], lease.lockName, callSite);
                }
            }
            mine.push(lease, callSite);
        } catch (RuntimeException e) {
            // A diagnostic never breaks the call that took the lock.
            log.debug("dlock lock-order monitor failed; ignored", e);
        }
    }

    /** The calling thread let go of its outermost hold of {@code lease}, or handed it to a pending result. */
    void released(Lease lease) {
        holds.get().remove(lease);
    }

    /**
     * Records that {@code taken} was taken while {@code held} was held; warns when the opposite order was seen
     * before, once per pair of names. Package-private for tests.
     */
    void recordOrder(String held, String heldSite, String taken, String takenSite) {
        ConcurrentHashMap<String, String> after = orders.get(held);
        if (after != null && after.containsKey(taken)) {
            return;
        }
        // Stored before the opposite order is looked up: of two threads recording opposite orders at once, at
        // least one sees the other's.
        if (orderCount.get() < maxOrders) {
            String who = describe(held, heldSite, taken, takenSite);
            if (orders.computeIfAbsent(held, name -> new ConcurrentHashMap<>()).putIfAbsent(taken, who) == null) {
                orderCount.incrementAndGet();
            }
        } else if (fullReported.compareAndSet(false, true)) {
            log.warn("dlock lock-order monitor remembers {} orders of lock names, its limit: orders seen from now on are "
                    + "no longer checked for inversions", maxOrders);
        }
        ConcurrentHashMap<String, String> before = orders.get(taken);
        String opposite = before == null ? null : before.get(held);
        if (opposite == null) {
            return;
        }
        NamePair pair = NamePair.of(held, taken);
        if (!warned.add(pair)) {
            return;
        }
        ConcurrentHashMap<String, String> mine = orders.get(held);
        String mineSeen = mine == null ? null : mine.get(taken);
        if (mineSeen == null) {
            // Not stored: the limit was reached.
            mineSeen = describe(held, heldSite, taken, takenSite);
        }
        log.warn("dlock lock-order inversion between locks '{}' and '{}': {}; {}. Two such calls at once can each hold "
                        + "one lock and wait for the other (a deadlock until a wait time runs out): take these locks in "
                        + "one order everywhere. Warned once for this pair.",
                pair.first, pair.second, opposite, mineSeen);
        inversions.accept(pair.first, pair.second);
    }

    /** How many orders of lock names are remembered now. */
    int orderCount() {
        return orderCount.get();
    }

    /** The most orders remembered. */
    int maxOrders() {
        return maxOrders;
    }

    /** Who took {@code taken} while holding {@code held}, for the warning. */
    private static String describe(String held, String heldSite, String taken, String takenSite) {
        if (heldSite != null) {
            String inner = takenSite != null && !takenSite.equals(heldSite) ? " (in " + takenSite + ")" : "";
            return heldSite + " took '" + held + "' then '" + taken + "'" + inner;
        }
        String site = takenSite != null ? takenSite : callerOutsideDlock();
        return site + " took '" + taken + "' while holding '" + held + "'";
    }

    /** The first frame of the stack outside the lock manager: the programmatic caller. Run once per new order. */
    private static String callerOutsideDlock() {
        return StackWalker.getInstance().walk(frames -> frames
                .filter(frame -> !isDlock(frame.getClassName()))
                .findFirst()
                .map(frame -> simpleName(frame.getClassName()) + "." + frame.getMethodName() + "(" + frame.getFileName()
                        + ":" + frame.getLineNumber() + ")")
                .orElse("an unknown caller"));
    }

    private static boolean isDlock(String className) {
        for (Class<?> engine : new Class<?>[] {LockManager.class, Acquisition.class, LockOrderMonitor.class, LeaseHandle.class}) {
            if (className.equals(engine.getName()) || className.startsWith(engine.getName() + "$")) {
                return true;
            }
        }
        return false;
    }

    private static String simpleName(String className) {
        return className.substring(className.lastIndexOf('.') + 1);
    }

    /** Two lock names in alphabetical order. */
    private record NamePair(String first, String second) {
        static NamePair of(String a, String b) {
            return a.compareTo(b) <= 0 ? new NamePair(a, b) : new NamePair(b, a);
        }
    }

    /** The outermost holds of one thread, oldest first, with their call sites. */
    private static final class Holds {
        Lease[] leases = new Lease[4];
        String[] sites = new String[4];
        int size;

        void push(Lease lease, String site) {
            if (size == leases.length) {
                leases = Arrays.copyOf(leases, size * 2);
                sites = Arrays.copyOf(sites, size * 2);
            }
            leases[size] = lease;
            sites[size] = site;
            size++;
        }

        void remove(Lease lease) {
            for (int i = size - 1; i >= 0; i--) {
                if (leases[i] == lease) {
                    removeAt(i);
                    return;
                }
            }
        }

        /**
         * Drops holds this thread no longer has: released on another thread, or handed to a pending asynchronous
         * result (no longer bound to this thread).
         */
        void forgetNotHeldBy(Thread me) {
            for (int i = size - 1; i >= 0; i--) {
                Lease lease = leases[i];
                if (lease.ownerThread != me || lease.recordedState() == LockState.RELEASED) {
                    removeAt(i);
                }
            }
        }

        private void removeAt(int i) {
            int after = size - i - 1;
            System.arraycopy(leases, i + 1, leases, i, after);
            System.arraycopy(sites, i + 1, sites, i, after);
            size--;
            leases[size] = null;
            sites[size] = null;
        }
    }
}
