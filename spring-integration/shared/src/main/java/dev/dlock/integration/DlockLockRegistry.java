package dev.dlock.integration;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Spring Integration's {@code LockRegistry} on dlock: {@link #obtain(Object)} answers a {@link DlockLock}, whose holds
 * are leases of a {@link LockManager} on whichever store it uses, in place of {@code RedisLockRegistry} or
 * {@code JdbcLockRegistry} (leader initiators, lock-guarded handlers, {@code executeLocked}). The locks keep those
 * registries' contract, with watchdog-kept leases, release notices and a fencing token per hold. Key {@code k} is the
 * store key {@code <registryKey>:k}; the registry key is the lock name in meters and events. Thread-safe; keeps nothing
 * per key beyond the holds in progress. Details: docs/migration/spring-integration.md#keep-your-code-dlock-behind-the-lockregistry.
 */
public final class DlockLockRegistry implements LineLockRegistry {

    /** The registry key when none is given: the prefix of every store key, and the lock name. */
    public static final String DEFAULT_REGISTRY_KEY = "spring-integration";

    final LockManager locks;
    final String registryKey;
    /** Who takes the locks, in dlock's lock-order warnings (a walk of the stack would name this module's own frame). */
    final String callSite;
    /** The holds in progress, one per key and locking thread (a lost hold stays until its thread unlocks it). */
    private final ConcurrentHashMap<HoldKey, Hold> holds = new ConcurrentHashMap<>();

    /** A registry over {@code locks} with the {@link #DEFAULT_REGISTRY_KEY}. */
    public DlockLockRegistry(LockManager locks) {
        this(locks, DEFAULT_REGISTRY_KEY);
    }

    /**
     * A registry over {@code locks} whose store keys start with {@code registryKey + ":"}; the registry key also names
     * the locks in meters and events, so keep it a fixed word (never an id).
     */
    public DlockLockRegistry(LockManager locks, String registryKey) {
        this.locks = Objects.requireNonNull(locks, "locks");
        if (registryKey == null || registryKey.isBlank()) {
            throw new IllegalArgumentException("the registry key must not be blank");
        }
        this.registryKey = registryKey;
        this.callSite = "LockRegistry '" + registryKey + "'";
    }

    /**
     * The lock of {@code lockKey}, a {@link String} as for Spring Integration's Redis and JDBC registries. Cheap: locks
     * of one key are equal, and their state lives in the registry, so any of them unlocks what another locked.
     *
     * @throws IllegalArgumentException when the key is not a String
     * @throws dev.dlock.core.LockKeyException when the key is blank or its store key is longer than
     *         {@value LockManager#MAX_KEY_BYTES} bytes
     */
    @Override
    public DlockLock obtain(Object lockKey) {
        if (!(lockKey instanceof String key)) {
            throw new IllegalArgumentException("dlock's LockRegistry takes String keys (as RedisLockRegistry and "
                    + "JdbcLockRegistry do), got " + (lockKey == null ? "null" : lockKey.getClass().getName()));
        }
        if (key.isBlank()) {
            throw new dev.dlock.core.LockKeyException("lock key is blank");
        }
        return new DlockLock(this, key, LockManager.validKey(registryKey + ":" + key));
    }

    /**
     * Nothing to do: the registry keeps no object per key once its last hold ended (Spring Integration's registries
     * cache one lock per key, which this call trims), so nothing unused can pile up.
     */
    @Override
    public void expireUnusedOlderThan(long age) {
        // Nothing is kept for a key that no thread holds.
    }

    /**
     * Checks that the calling thread holds {@code lockKey} and that its lease lives: dlock's watchdog renews a held
     * lease by itself, so there is nothing to send.
     *
     * @throws IllegalStateException when the calling thread does not hold the lock, or its lease was lost
     * @throws UnsupportedOperationException when the hold has a fixed lease (taken with a TTL): dlock does not extend
     *         a fixed lease; lock without a TTL and the watchdog keeps the lease for as long as it is held
     */
    @Override
    public void renewLock(Object lockKey) {
        Hold hold = obtain(lockKey).currentHold();
        if (hold == null) {
            throw new IllegalStateException("Could not renew lock '" + lockKey + "' of " + this
                    + ": the current thread does not hold it");
        }
        if (hold.fixedLease) {
            throw new UnsupportedOperationException("Could not renew lock '" + lockKey + "' of " + this + ": it was taken "
                    + "with a fixed TTL, which dlock does not extend; lock without a TTL and dlock's watchdog keeps the "
                    + "lease for as long as the lock is held");
        }
        if (!hold.handle.isHeld()) {
            throw new IllegalStateException("Could not renew lock '" + lockKey + "' of " + this + ": its lease was lost ("
                    + hold.handle.state() + ")");
        }
    }

    /**
     * As {@link #renewLock(Object)}: the watchdog already renews the lease for as long as it is held, so a lease of
     * at least {@code ttl} from now is kept without a store call. (Spring Integration 7's {@code renewLock(key, ttl)}.)
     */
    public void renewLock(Object lockKey, Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        renewLock(lockKey);
    }

    /** The registry key: the prefix of every store key, and the lock name. */
    public String registryKey() {
        return registryKey;
    }

    /** The lock manager whose leases the locks are. */
    public LockManager lockManager() {
        return locks;
    }

    @Override
    public String toString() {
        return "DlockLockRegistry{registryKey=" + registryKey + "}";
    }

    Hold hold(String storeKey, Thread thread) {
        return holds.get(new HoldKey(storeKey, thread));
    }

    void held(String storeKey, Thread thread, Hold hold) {
        holds.put(new HoldKey(storeKey, thread), hold);
    }

    void ended(String storeKey, Thread thread) {
        holds.remove(new HoldKey(storeKey, thread));
    }

    /** One thread's hold of one key: the lease, and how many times the thread locked it without unlocking. */
    static final class Hold {
        final LockHandle handle;
        final boolean fixedLease;
        /** Touched by the holding thread only. */
        int count = 1;

        Hold(LockHandle handle, boolean fixedLease) {
            this.handle = handle;
            this.fixedLease = fixedLease;
        }
    }

    private record HoldKey(String storeKey, Thread thread) {
    }
}
