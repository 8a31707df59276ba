package dev.dlock.integration;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import org.springframework.dao.DataAccessResourceFailureException;

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
     * Renews the calling thread's hold of {@code lockKey}: a hold taken with a TTL ({@code lock(ttl)},
     * {@code tryLock(wait, ttl)}) is kept for its TTL again from now, in one store call that gives its lease a new term
     * (nothing sent for the lease before can change it, see {@link LockHandle#extend(Duration)}); a hold without a TTL is
     * renewed by dlock's watchdog for as long as it is held, so nothing is sent and only the checks apply.
     *
     * @throws IllegalStateException when the calling thread does not hold the lock, or its lease was lost or had run
     *         out (the cause, a {@link LockLostException}, says why; its unlock then throws too)
     * @throws DataAccessResourceFailureException when the store could not be told: the outcome is unknown, and the
     *         lease counts until the earlier of its old and new ends
     */
    @Override
    public void renewLock(Object lockKey) {
        renew(lockKey, null);
    }

    /**
     * Renews the calling thread's hold of {@code lockKey} like {@link #renewLock(Object)}, for {@code ttl} from now: a
     * hold taken with a TTL keeps {@code ttl} as its TTL from then on; a hold without one stays with the watchdog,
     * which renews it for as long as it is held. (Spring Integration 7's {@code renewLock(key, ttl)}.)
     *
     * @throws IllegalArgumentException when {@code ttl} is shorter than {@link dev.dlock.core.LockRequest#MIN_LEASE_TIME}
     */
    public void renewLock(Object lockKey, Duration ttl) {
        renew(lockKey, Objects.requireNonNull(ttl, "ttl"));
    }

    private void renew(Object lockKey, Duration ttl) {
        Hold hold = obtain(lockKey).currentHold();
        if (hold == null) {
            throw new IllegalStateException("Could not renew lock '" + lockKey + "' of " + this
                    + ": the current thread does not hold it");
        }
        Duration term = ttl != null ? ttl : hold.ttl;
        if (term == null) {
            // No TTL: the watchdog renews the lease for as long as it is held.
            if (!hold.handle.isHeld()) {
                throw new IllegalStateException("Could not renew lock '" + lockKey + "' of " + this + ": its lease was lost ("
                        + hold.handle.state() + ")");
            }
            return;
        }
        try {
            hold.handle.extend(term);
        } catch (LockLostException e) {
            throw new IllegalStateException("Could not renew lock '" + lockKey + "' of " + this + ": its lease was lost ("
                    + e.getMessage() + ")", e);
        } catch (LockBackendException e) {
            throw new DataAccessResourceFailureException("Failed to renew lock '" + lockKey + "' of " + this
                    + " in the store: the outcome is unknown", e);
        }
        if (hold.ttl != null) {
            hold.ttl = term;
        }
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

    /** One thread's hold of one key: the lease, its TTL, and how many times the thread locked it without unlocking. */
    static final class Hold {
        final LockHandle handle;
        /** The fixed lease the hold was taken or last renewed with; null for a watchdog-managed one. Holding thread only. */
        Duration ttl;
        /** Touched by the holding thread only. */
        int count = 1;

        Hold(LockHandle handle, Duration ttl) {
            this.handle = handle;
            this.ttl = ttl;
        }
    }

    private record HoldKey(String storeKey, Thread thread) {
    }
}
