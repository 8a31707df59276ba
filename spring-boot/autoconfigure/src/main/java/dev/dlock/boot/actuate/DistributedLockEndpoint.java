package dev.dlock.boot.actuate;

import dev.dlock.core.HeldLock;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;

import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The Actuator endpoint {@code dlock}: {@code GET /actuator/dlock} lists the locks this JVM holds now;
 * {@code GET /actuator/dlock/{name}?key=...} says who holds lock {@code name}'s key in the store, whichever instance;
 * {@code DELETE /actuator/dlock/{name}?key=...} frees it, an operator's forced release, refused unless
 * {@value #FORCE_RELEASE_PROPERTY} is true.
 */
@Endpoint(id = DistributedLockEndpoint.ID)
public class DistributedLockEndpoint {

    private static final Logger log = LoggerFactory.getLogger(DistributedLockEndpoint.class);

    /** The endpoint's id. */
    public static final String ID = "dlock";

    /** The property that allows the forced release. */
    public static final String FORCE_RELEASE_PROPERTY = "dlock.admin.force-release.enabled";

    private static final int STATUS_FORBIDDEN = 403;
    private static final int STATUS_NOT_IMPLEMENTED = 501;

    private final LockManager lockManager;
    private final boolean forceReleaseEnabled;

    /** Creates the endpoint over {@code lockManager}, with the forced release refused. */
    public DistributedLockEndpoint(LockManager lockManager) {
        this(lockManager, false);
    }

    /** Creates the endpoint over {@code lockManager}; {@code forceReleaseEnabled} allows the forced release. */
    public DistributedLockEndpoint(LockManager lockManager, boolean forceReleaseEnabled) {
        this.lockManager = Objects.requireNonNull(lockManager, "lockManager");
        this.forceReleaseEnabled = forceReleaseEnabled;
    }

    /**
     * Who holds {@code key} of lock {@code name} (the store key {@code <name>:<key>}) in the store now, whichever
     * instance took it; this instance's holds only when the store cannot say ({@code acrossInstances} false).
     */
    @ReadOperation
    public LockHoldersDescriptor holders(@Selector String name, String key) {
        List<LockHolder> holders = lockManager.holders(logicalKey(name, key));
        return new LockHoldersDescriptor(name, key, lockManager.backend().holderInspection().isPresent(), holders.size(),
                holders.stream().map(LockHolderDescriptor::of).toList());
    }

    /**
     * Frees {@code key} of lock {@code name} in the store whoever holds it (403 unless {@value #FORCE_RELEASE_PROPERTY}
     * is true; 501 when the store cannot). The holders removed learn at their next renewal that their lease is lost.
     */
    @DeleteOperation
    public WebEndpointResponse<Object> forceRelease(@Selector String name, String key) {
        String logicalKey = logicalKey(name, key);
        if (!forceReleaseEnabled) {
            log.warn("dlock refused a forced release of key '{}' through the Actuator endpoint: {} is not true", logicalKey,
                    FORCE_RELEASE_PROPERTY);
            return new WebEndpointResponse<>(Map.of("error", "forced release is off: set " + FORCE_RELEASE_PROPERTY
                    + "=true to allow DELETE /actuator/" + ID + "/{name}?key=..."), STATUS_FORBIDDEN);
        }
        if (lockManager.backend().holderInspection().isEmpty()) {
            return new WebEndpointResponse<>(Map.of("error", "the lock store " + lockManager.backend().getClass().getSimpleName()
                    + " cannot force a release"), STATUS_NOT_IMPLEMENTED);
        }
        List<LockHolder> removed = lockManager.forceRelease(name, logicalKey);
        return new WebEndpointResponse<>(new LockHoldersDescriptor(name, key, true, removed.size(),
                removed.stream().map(LockHolderDescriptor::of).toList()), WebEndpointResponse.STATUS_OK);
    }

    private static String logicalKey(String name, String key) {
        return LockManager.validKey(name + ":" + Objects.requireNonNull(key, "key"));
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
     * @param fencingToken null while the holder has not asked for its token, on a store that issues tokens on request
     *                     (Redis exclusive locks); reading the endpoint never issues one
     */
    public record HeldLockDescriptor(String name, String key, String holderThread, String heldFor, long heldForMillis,
                                     String leaseExpiresIn, long leaseExpiresInMillis, long renewals, Long fencingToken,
                                     boolean watchdogManaged, String state) {

        static HeldLockDescriptor of(HeldLock lock) {
            return new HeldLockDescriptor(lock.lockName(), lock.key(), lock.holderThread(),
                    lock.heldFor().toString(), lock.heldFor().toMillis(),
                    lock.leaseExpiresIn() == null ? null : lock.leaseExpiresIn().toString(),
                    lock.leaseExpiresIn() == null ? -1 : lock.leaseExpiresIn().toMillis(),
                    lock.renewals(), lock.fencingTokenIssued() ? lock.fencingToken() : null, lock.watchdogManaged(),
                    lock.state().name());
        }
    }

    /**
     * Who holds one key (or, answering a forced release, who was removed from it).
     *
     * @param acrossInstances true when the store said (every instance's holders); false for this instance's only
     */
    public record LockHoldersDescriptor(String name, String key, boolean acrossInstances, int count,
                                        List<LockHolderDescriptor> holders) {
    }

    /**
     * One holder as the store records it. The owner token itself is left out: whoever has it could release the lock.
     *
     * @param acquiredAt     ISO-8601 instant by the holder instance's clock; null when its token does not say
     * @param leaseRemaining null, and its milliseconds -1, when the store keeps the lease while the holder's session lives
     */
    public record LockHolderDescriptor(String instance, String holder, String acquiredAt, String leaseRemaining,
                                       long leaseRemainingMillis) {

        static LockHolderDescriptor of(LockHolder holder) {
            Duration remaining = holder.leaseRemaining();
            return new LockHolderDescriptor(holder.instance(), holder.holder(),
                    holder.acquiredAt() == null ? null : holder.acquiredAt().toString(),
                    remaining == null ? null : remaining.toString(), remaining == null ? -1 : remaining.toMillis());
        }
    }
}
