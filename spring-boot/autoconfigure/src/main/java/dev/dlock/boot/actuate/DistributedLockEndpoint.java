package dev.dlock.boot.actuate;

import dev.dlock.core.HeldLock;
import dev.dlock.core.LockManager;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/** The Actuator endpoint {@code dlock} ({@code GET /actuator/dlock}): the locks this JVM holds now. */
@Endpoint(id = DistributedLockEndpoint.ID)
public class DistributedLockEndpoint {

    /** The endpoint's id. */
    public static final String ID = "dlock";

    private final LockManager lockManager;

    /** Creates the endpoint over {@code lockManager}. */
    public DistributedLockEndpoint(LockManager lockManager) {
        this.lockManager = Objects.requireNonNull(lockManager, "lockManager");
    }

    /** The locks held now, longest held first. */
    @ReadOperation
    public HeldLocksDescriptor heldLocks() {
        List<HeldLockDescriptor> locks = lockManager.heldLocks().stream()
                .sorted(Comparator.comparing(HeldLock::heldFor).reversed())
                .map(HeldLockDescriptor::of)
                .toList();
        return new HeldLocksDescriptor(locks.size(), lockManager.watchedLeaseCount(), locks);
    }

    /**
     * The endpoint's answer.
     *
     * @param count         how many locks are held
     * @param watchedLeases how many of them the watchdog renews
     */
    public record HeldLocksDescriptor(int count, int watchedLeases, List<HeldLockDescriptor> locks) {
    }

    /**
     * One held lock. Durations are ISO-8601 ({@code PT1.5S}), with their milliseconds alongside.
     *
     * @param holderThread null once the lock belongs to pending asynchronous work
     * @param leaseExpiresIn null, and its milliseconds -1, when the store keeps the lease alive by its session
     */
    public record HeldLockDescriptor(String name, String key, String holderThread, String heldFor, long heldForMillis,
                                     String leaseExpiresIn, long leaseExpiresInMillis, long renewals, long fencingToken,
                                     boolean watchdogManaged, String state) {

        static HeldLockDescriptor of(HeldLock lock) {
            return new HeldLockDescriptor(lock.lockName(), lock.key(), lock.holderThread(),
                    lock.heldFor().toString(), lock.heldFor().toMillis(),
                    lock.leaseExpiresIn() == null ? null : lock.leaseExpiresIn().toString(),
                    lock.leaseExpiresIn() == null ? -1 : lock.leaseExpiresIn().toMillis(),
                    lock.renewals(), lock.fencingToken(), lock.watchdogManaged(), lock.state().name());
        }
    }
}
