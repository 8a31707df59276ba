package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.StoredHolder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

/**
 * What an operator or a dashboard asks of a {@link LockManager}, apart from locking: who holds a key in the store
 * (whichever JVM took it), an operator's forced release, the locks this JVM holds, and the watchdog's counters. Kept
 * out of the manager so that its API is the one of taking and releasing locks; get it from {@link LockManager#admin()}.
 * Thread-safe.
 */
public final class LockAdmin {

    private static final Logger log = LoggerFactory.getLogger(LockAdmin.class);

    private final LockManager manager;
    /** Set on a thread while it forces a release through this manager. */
    private final ThreadLocal<Boolean> forcing = new ThreadLocal<>();

    LockAdmin(LockManager manager) {
        this.manager = manager;
    }

    /** The locks the manager holds now, for diagnostics. */
    public List<HeldLock> heldLocks() {
        List<HeldLock> held = new ArrayList<>();
        long now = System.nanoTime();
        for (Lease lease : manager.gates.held()) {
            held.add(heldLock(lease, now));
        }
        return held;
    }

    private static HeldLock heldLock(Lease lease, long now) {
        Thread thread = lease.ownerThread;
        return new HeldLock(lease.lockName, lease.key, thread == null ? null : thread.getName(),
                Duration.ofNanos(now - lease.acquiredAtNanos),
                lease.keptBySession ? null : Duration.ofNanos(Math.max(0, lease.expiresAtNanos - now)), lease.renewals,
                lease.issuedToken(), lease.watched, lease.state());
    }

    /**
     * Who holds {@code key} in the store now, whichever instance (JVM) took it, across every kind of lock the store
     * takes (exclusive and fair, read and write, permits); empty when it is free. Reads only. When the store cannot
     * say (no {@link BackendCapabilities#holderInspection()}), answers this JVM's own holds of the key only. After local
     * hand-offs, a holder names the acquisition that took the key from the store (see {@link LockHolder}).
     *
     * @throws LockKeyException when the key is null, blank or too long
     * @throws LockBackendException when the store cannot be reached
     */
    public List<LockHolder> holders(String key) {
        return holders(null, key);
    }

    /**
     * Who holds {@code key} as {@code kind} in the store now ({@link #holders(String)} for one kind; a null kind means
     * every kind the store takes). Without the store's {@link BackendCapabilities#holderInspection()}, this JVM's holds only.
     *
     * @throws LockKeyException when the key is null, blank or too long
     * @throws LockBackendException when the store cannot be reached
     */
    public List<LockHolder> holders(@Nullable LockKind kind, String key) {
        LockManager.validKey(key);
        Optional<HolderInspection> inspection = manager.capabilities().holderInspection();
        if (inspection.isEmpty()) {
            return localHolders(kind, key);
        }
        return collect(kind, inspection.get()::holders, key);
    }

    /**
     * {@link #forceRelease(String, String)} under the default lock name ({@link LockRequest#DEFAULT_NAME}), for keys
     * taken without a name.
     */
    public List<LockHolder> forceRelease(String key) {
        return forceRelease(LockRequest.DEFAULT_NAME, key);
    }

    /**
     * An operator's order: frees {@code key} in the store whoever holds it, of every kind the store takes, and tells
     * waiters as a release does; answers the holders it removed (empty when the key was free). Logs one WARN naming
     * the key and the instances and holders removed, and tells the listeners
     * ({@link LockListener#onForcedRelease}). Each removed holder learns at its next renewal (or at its release) that
     * its lease is lost; in this JVM the reason says "taken by a forced release". Fencing tokens keep increasing: the
     * next holder's is larger than the removed ones'. Use it for a holder that is stuck, never as a way to lock.
     *
     * @param lockName the lock's static name, for the listeners and metrics (never an id)
     * @param key      the logical key, as the store has it (the annotation's is {@code <name>:<key>})
     * @throws UnsupportedOperationException when the store cannot force a release (no {@link BackendCapabilities#holderInspection()})
     * @throws LockKeyException when the key is null, blank or too long
     * @throws LockBackendException when the store cannot be reached; some holders may have been removed
     */
    public List<LockHolder> forceRelease(String lockName, String key) {
        LockManager.validKey(key);
        if (lockName == null || lockName.isBlank()) {
            throw new IllegalArgumentException("forceRelease needs the lock's name, was blank; key '" + key + "'");
        }
        HolderInspection inspection = manager.capabilities().holderInspection().orElseThrow(() -> new UnsupportedOperationException(
                "the store " + manager.backend().getClass().getSimpleName() + " cannot say who holds a key nor force a release "
                        + "(it offers no HolderInspection); key '" + key + "'"));
        // Only the kinds found held are freed, each lock once (exclusive and fair are one): freeing a kind wakes waiters,
        // and one of them taking the key must not be removed by freeing another kind of the same lock right after.
        List<LockKind> held = new ArrayList<>();
        LinkedHashMap<String, LockHolder> seen = new LinkedHashMap<>();
        for (LockKind kind : supportedKinds()) {
            boolean news = false;
            for (StoredHolder stored : inspection.holders(kind, key)) {
                news |= seen.putIfAbsent(stored.owner(), LockHolder.of(stored)) == null;
            }
            if (news) {
                held.add(kind);
            }
        }
        // Remembered before the store frees them: a holder of this JVM may renew right after, and must learn why.
        List<LockHolder> before = new ArrayList<>(seen.values());
        before.forEach(holder -> ForcedReleases.removed(holder.owner()));
        List<LockHolder> removed = new ArrayList<>();
        forcing.set(Boolean.TRUE);
        try {
            for (LockKind kind : held) {
                removed.addAll(collect(kind, inspection::forceRelease, key));
            }
        } finally {
            forcing.remove();
        }
        for (LockHolder holder : before) {
            if (removed.stream().noneMatch(r -> r.owner().equals(holder.owner()))) {
                ForcedReleases.reason(holder.owner(), null);
            }
        }
        removed.forEach(holder -> ForcedReleases.removed(holder.owner()));
        // This JVM's removed holders lose their lease now, not at their next renewal: their turn on the key goes to
        // the JVM's next waiter at once, as the key went to every other JVM.
        for (LockHolder holder : removed) {
            localLease(key, holder.owner()).ifPresent(lease -> manager.losses.leaseLost(lease, ForcedReleases.REASON, false));
        }
        log.warn("dlock forced release of key '{}' (lock '{}'), an operator's order: {}", key, lockName, removed.isEmpty()
                ? "nobody held it" : "removed " + removed.stream()
                .map(holder -> "holder '" + holder.holder() + "' of instance '" + holder.instance() + "'").toList());
        manager.listener.onForcedRelease(lockName, key, removed);
        return removed;
    }

    /**
     * Whether the calling thread is inside this manager's {@link #forceRelease}: the store's notice of it is then left
     * to that call, which ends this manager's removed leases itself.
     */
    boolean forcingOnThisThread() {
        return forcing.get() != null;
    }

    /** This manager's lease of {@code key} (any kind) whose store owner is {@code owner}; empty when none. */
    private Optional<Lease> localLease(String key, String owner) {
        return manager.gates.of(key).stream().filter(lease -> lease.ownedBy(owner)).findFirst();
    }

    /** The holders {@code read} answers for {@code key} as {@code kind}, or as every kind the store takes when null. */
    private List<LockHolder> collect(LockKind kind, BiFunction<LockKind, String, List<StoredHolder>> read,
                                     String key) {
        List<LockKind> kinds = kind != null ? List.of(kind) : supportedKinds();
        // Exclusive and fair are one lock: a store may report its holder for both.
        LinkedHashMap<String, LockHolder> byOwner = new LinkedHashMap<>();
        for (LockKind each : kinds) {
            for (StoredHolder stored : read.apply(each, key)) {
                byOwner.putIfAbsent(stored.owner(), LockHolder.of(stored));
            }
        }
        return new ArrayList<>(byOwner.values());
    }

    /** One kind per lock the store takes, for asking it about a key's holders of every kind. */
    private List<LockKind> supportedKinds() {
        List<LockKind> kinds = new ArrayList<>();
        for (LockKind.Mode mode : LockKind.Mode.values()) {
            if (mode == LockKind.Mode.EXCLUSIVE || manager.capabilities().modes().contains(mode)) {
                // A key's permits are one set of holders whatever their number.
                kinds.add(mode == LockKind.Mode.PERMITS ? LockKind.permits(1) : LockKind.of(mode));
            }
        }
        return kinds;
    }

    /** This JVM's holds of {@code key} (of {@code kind}, or of any kind when null), for a store that cannot say more. */
    private List<LockHolder> localHolders(LockKind kind, String key) {
        List<LockHolder> holders = new ArrayList<>();
        long now = System.nanoTime();
        for (Lease lease : manager.gates.of(key)) {
            if (kind == null || lease.kind.mode() == kind.mode()) {
                holders.add(LockHolder.of(new StoredHolder(lease.owner, lease.keptBySession ? StoredHolder.NO_EXPIRY
                        : Math.max(0, TimeUnit.NANOSECONDS.toMillis(lease.expiresAtNanos - now)))));
            }
        }
        return holders;
    }

    /** How many watchdog-managed leases are held now. */
    public int watchedLeaseCount() {
        return manager.watchedLeases.get();
    }

    /** How many renewal rounds or batches failed since start (the watchdog logs each and carries on). */
    public long watchdogErrorCount() {
        return manager.watchdog.errors();
    }

    /**
     * How many renewal calls are in flight now for longer than the leases they carry can afford (a
     * third of the shortest lease): a stalled store node. Zero when the watchdog keeps up.
     */
    public int watchdogStalledCalls() {
        return manager.watchdog.stalledCalls();
    }

    /** How many renewal calls overran their deadline since start (each also logged). */
    public long watchdogStallCount() {
        return manager.watchdog.stallCount();
    }

    /** How many renewal calls the watchdog has made to the store since start. */
    public long watchdogRenewCallCount() {
        return manager.watchdog.renewCalls();
    }

}
