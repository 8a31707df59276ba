package dev.dlock.shedlock;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import net.javacrumbs.shedlock.core.ExtensibleLockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * ShedLock's {@link LockProvider} backed by a dlock {@link LockManager}: an application keeps every
 * {@code @SchedulerLock} and locks in any dlock store. It is an {@link ExtensibleLockProvider}: a running task may
 * extend its lock ({@code LockExtender.extendActiveLock}).
 *
 * <p>ShedLock's semantics stay as its documentation states them: {@code lockAtMostFor} is a fixed lease (no
 * watchdog renews it), {@code lockAtLeastFor} is honoured at unlock (the lease is shortened to what is left of it), and
 * a name someone holds — another instance, another thread, or the calling thread itself — is skipped at once, never
 * waited for; {@code extend(lockAtMostFor, lockAtLeastFor)} keeps the lock for the new {@code lockAtMostFor} from now,
 * answers a new lock and leaves the old one invalid, or answers empty when the lock was no longer held. What dlock
 * adds: the unlock touches only its own owner token, a lease that ran out before the unlock is
 * reported (a WARN here, and {@code LockListener.onLeaseLost} on the manager) instead of deleting the next holder's
 * lock, and the running task reads its fencing token from {@link ShedLockContext}.
 *
 * <p>ShedLock's name {@code job} is dlock key {@code <lockName>:job} under the dlock lock name given here (default
 * {@value #DEFAULT_LOCK_NAME}, the tag of dlock's meters). An extension is a new term of the lease in the store
 * ({@link LockHandle#extend(Duration, Duration)}): nothing sent for the lock before it can change the extended lock.
 */
public final class DlockLockProvider implements ExtensibleLockProvider {

    /** The dlock lock name of ShedLock's locks when none is given: every key starts with {@code shedlock:}. */
    public static final String DEFAULT_LOCK_NAME = "shedlock";

    private static final Logger log = LoggerFactory.getLogger(DlockLockProvider.class);
    private static final Duration ONE_MILLISECOND = Duration.ofMillis(1);

    private final LockManager locks;
    private final String lockName;
    /** ShedLock names already warned about a {@code lockAtMostFor} below dlock's shortest lease (bounded: static names). */
    private final Set<String> shortLeaseWarned = ConcurrentHashMap.newKeySet();

    /** A provider whose locks are dlock keys {@code shedlock:<ShedLock name>} in {@code locks}. */
    public DlockLockProvider(LockManager locks) {
        this(locks, DEFAULT_LOCK_NAME);
    }

    /** A provider whose locks are dlock keys {@code <lockName>:<ShedLock name>} in {@code locks}, tagged {@code lockName}. */
    public DlockLockProvider(LockManager locks, String lockName) {
        this.locks = Objects.requireNonNull(locks, "locks");
        if (lockName == null || lockName.isBlank()) {
            throw new IllegalArgumentException("the dlock lock name of ShedLock's locks must not be blank");
        }
        this.lockName = lockName;
    }

    /** The dlock lock name of this provider's locks (their meters' tag). */
    public String lockName() {
        return lockName;
    }

    /** The dlock key of ShedLock's lock {@code name}. */
    public String key(String name) {
        return lockName + ":" + name;
    }

    /**
     * Takes the lock {@code configuration} names for {@code lockAtMostFor}, trying once; empty when anyone holds it.
     *
     * @throws dev.dlock.core.LockBackendException when the store cannot be reached (ShedLock's own providers throw too:
     *         the run fails and the next one tries again)
     */
    @Override
    public Optional<SimpleLock> lock(LockConfiguration configuration) {
        String name = configuration.getName();
        LockRequest request = LockRequest.builder(key(name)).name(lockName).waitTime(Duration.ZERO)
                .leaseTime(lease(configuration)).lockAtLeastFor(lockAtLeastFor(configuration)).build();
        Optional<LockHandle> taken = locks.tryAcquire(request);
        if (taken.isEmpty()) {
            return Optional.empty();
        }
        // Bound to no thread: ShedLock skips a held name for the holding thread too, and any thread may unlock.
        LockHandle handle = taken.get().detachFromThread();
        return Optional.of(new DlockSimpleLock(this, configuration, handle, ShedLockContext.enter(name, handle)));
    }

    /** {@code lockAtMostFor} as a fixed lease, never below dlock's shortest ({@link LockRequest#MIN_LEASE_TIME}). */
    Duration lease(LockConfiguration configuration) {
        Duration atMost = configuration.getLockAtMostFor();
        if (atMost.compareTo(LockRequest.MIN_LEASE_TIME) >= 0) {
            return atMost;
        }
        if (shortLeaseWarned.add(configuration.getName())) {
            log.warn("ShedLock lock '{}' asks for lockAtMostFor {}: dlock holds it for {} ms, its shortest lease (one store "
                    + "call must fit in a lease)", configuration.getName(), atMost, LockRequest.MIN_LEASE_TIME.toMillis());
        }
        return LockRequest.MIN_LEASE_TIME;
    }

    /** {@code lockAtLeastFor}, or null for none; a fraction of a millisecond counts as one (held at least, never less). */
    static Duration lockAtLeastFor(LockConfiguration configuration) {
        Duration atLeast = configuration.getLockAtLeastFor();
        if (atLeast.isZero() || atLeast.isNegative()) {
            return null;
        }
        return atLeast.compareTo(ONE_MILLISECOND) < 0 ? ONE_MILLISECOND : atLeast;
    }

    @Override
    public String toString() {
        return "DlockLockProvider[" + lockName + "]";
    }
}
