package dev.dlock.core;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A {@link LockManager}'s gates, one per key and {@link LockKind.Family family} while anyone uses it: an acquisition
 * enters before it asks the store and leaves when it ends without the key, a lease's release leaves for it. The last
 * to leave drops the gate and its release-notice subscription. Also where a thread finds the lease it holds already
 * (re-entry) and where the manager's leases are read from.
 */
final class KeyGates {

    private final ConcurrentHashMap<GateKey, KeyGate> gates = new ConcurrentHashMap<>();
    /** How the threads waiting in the gates time out: the JDK's clock, or a model checker's. */
    private volatile KeyGate.TimedWait timedWait = KeyGate.TimedWait.JDK;

    /** Makes the threads waiting in gates made from now on time out by {@code timedWait}'s clock (a model checker's). */
    void useTimedWait(KeyGate.TimedWait timedWait) {
        this.timedWait = timedWait;
    }

    /** The gate of {@code key} in {@code kind}'s family, made when none is in use, with one more user. */
    KeyGate enter(LockKind kind, String key) {
        return gates.compute(new GateKey(kind.family(), key), (k, gate) -> {
            KeyGate entered = gate == null ? new KeyGate(timedWait) : gate;
            entered.users++;
            return entered;
        });
    }

    /** One user fewer of {@code gate}; the last one drops it and ends its release-notice subscription. */
    void leave(LockKind kind, String key, KeyGate gate) {
        boolean[] last = new boolean[1];
        gates.computeIfPresent(new GateKey(kind.family(), key), (k, current) -> {
            if (current != gate) {
                return current;
            }
            last[0] = --current.users == 0;
            return last[0] ? null : current;
        });
        if (last[0]) {
            gate.notices.close();
        }
    }

    /**
     * The manager closes: every thread waiting in a gate, for the turn or between store attempts, wakes and fails now
     * instead of at its deadline or the end of the grace period.
     */
    void refuseWaiters() {
        for (KeyGate gate : gates.values()) {
            gate.turn.wakeWaiters();
            gate.notices.wakeWaiters();
        }
    }

    /** The exclusive lease (exclusive, fair or write) this JVM holds on {@code key} in {@code family}; null when none. */
    Lease exclusiveHolder(LockKind.Family family, String key) {
        KeyGate gate = gates.get(new GateKey(family, key));
        return gate == null ? null : gate.holders.exclusive();
    }

    /**
     * A new handle on the lease the calling thread holds on {@code key} in {@code kind}'s family; null when it
     * holds none. A read inside the thread's own write lease re-enters the write lease; a write asked for
     * inside the thread's own read lease is refused, since two readers doing that would wait for each other.
     */
    LeaseHandle reenter(LockKind kind, String key) {
        KeyGate current = gates.get(new GateKey(kind.family(), key));
        if (current == null) {
            return null;
        }
        Thread me = Thread.currentThread();
        Lease held = current.holders.exclusive();
        if (held != null && held.ownerThread == me && held.reenter()) {
            return new LeaseHandle(held, true);
        }
        for (Lease shared : current.holders.shared()) {
            if (shared.ownerThread != me) {
                continue;
            }
            if (kind.mode() == LockKind.Mode.WRITE) {
                throw new IllegalStateException("this thread holds " + shared + " and asks for its WRITE lock: a read lock "
                        + "cannot be upgraded (two readers doing so would wait for each other forever); release the read "
                        + "lock first, or take the write lock from the start");
            }
            if (shared.reenter()) {
                return new LeaseHandle(shared, true);
            }
        }
        return null;
    }

    /** Every lease held now (exclusive and shared), lost ones included until their holders close them. */
    List<Lease> held() {
        List<Lease> held = new ArrayList<>();
        for (KeyGate gate : gates.values()) {
            held.addAll(gate.holders.all());
        }
        return held;
    }

    /** The leases of {@code key}, of every family, the exclusive one of each family first. */
    List<Lease> of(String key) {
        List<Lease> leases = new ArrayList<>();
        for (LockKind.Family family : LockKind.Family.values()) {
            KeyGate gate = gates.get(new GateKey(family, key));
            if (gate != null) {
                leases.addAll(gate.holders.all());
            }
        }
        return leases;
    }

    /** A key's gate is per family of kinds: the families are separate locks in the store. */
    private record GateKey(LockKind.Family family, String key) {
    }
}
