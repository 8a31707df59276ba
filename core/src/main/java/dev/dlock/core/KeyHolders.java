package dev.dlock.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The leases this JVM holds on one key of one family: the exclusive one (exclusive, fair or write), or the shared
 * ones (read, permits). One per {@link KeyGate}. A lease is added by the acquisition that recorded it, once its store
 * grant is kept, and removed by its release, before the release gives the turn back or passes it on; between the
 * two, re-entry, diagnostics, a lapse check and the manager's shutdown read it here. Lock-free: readers see a lease
 * from the moment it is added, whatever thread reads.
 */
final class KeyHolders {

    /** The exclusive lease; null when none. */
    private volatile Lease exclusive;
    private final Set<Lease> shared = ConcurrentHashMap.newKeySet();

    /** Records {@code lease} as held: a shared one beside the others, an exclusive one as the key's holder. */
    void add(Lease lease) {
        if (lease.kind.shared()) {
            shared.add(lease);
        } else {
            exclusive = lease;
        }
    }

    /** Forgets {@code lease}; an exclusive lease is forgotten only while it is still the key's holder. */
    void remove(Lease lease) {
        if (lease.kind.shared()) {
            shared.remove(lease);
        } else if (exclusive == lease) {
            exclusive = null;
        }
    }

    /** Whether {@code lease} is still held here (its holder has not finished releasing it). */
    boolean contains(Lease lease) {
        return lease.kind.shared() ? shared.contains(lease) : exclusive == lease;
    }

    /** The exclusive lease held now; null when none. */
    Lease exclusive() {
        return exclusive;
    }

    /** The shared leases held now (a live view). */
    Set<Lease> shared() {
        return shared;
    }

    /** Every lease held now, the exclusive one first. */
    List<Lease> all() {
        List<Lease> all = new ArrayList<>(shared.size() + 1);
        Lease held = exclusive;
        if (held != null) {
            all.add(held);
        }
        all.addAll(shared);
        return all;
    }

    /** The lease whose store owner is {@code owner}; null when none. */
    Lease ownedBy(String owner) {
        Lease held = exclusive;
        if (held != null && held.ownedBy(owner)) {
            return held;
        }
        for (Lease lease : shared) {
            if (lease.ownedBy(owner)) {
                return lease;
            }
        }
        return null;
    }
}
