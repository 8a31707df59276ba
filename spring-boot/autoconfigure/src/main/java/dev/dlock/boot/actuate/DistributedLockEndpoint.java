package dev.dlock.boot.actuate;

import dev.dlock.core.HeldLock;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKeyException;
import dev.dlock.core.LockKeys;
import dev.dlock.core.LockManager;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * The Actuator endpoint {@code dlock}: {@code GET /actuator/dlock} lists the locks this JVM holds now;
 * {@code GET /actuator/dlock/{name}?key=...} says who holds lock {@code name}'s key in the store, whichever instance;
 * {@code DELETE /actuator/dlock/{name}?key=...} frees it, an operator's forced release. The key is the store key as
 * the list shows it ({@code <name>:<key>} for the annotation's locks), the same in every operation.
 *
 * <p>Its access is {@link Access#READ_ONLY} by default: Spring Boot itself refuses the forced release (a delete
 * operation) until {@code management.endpoint.dlock.access=unrestricted}. This class answers every technology
 * (JMX too); {@link DistributedLockWebEndpointExtension} gives the web its status codes.
 */
@Endpoint(id = DistributedLockEndpoint.ID, defaultAccess = Access.READ_ONLY)
public class DistributedLockEndpoint {

    /** The endpoint's id. */
    public static final String ID = "dlock";

    /** The property that sets who may do what through the endpoint: {@code read-only} (default) or {@code unrestricted}. */
    public static final String ACCESS_PROPERTY = "management.endpoint." + ID + ".access";

    private final LockManager lockManager;

    /** Creates the endpoint over {@code lockManager}. */
    public DistributedLockEndpoint(LockManager lockManager) {
        this.lockManager = Objects.requireNonNull(lockManager, "lockManager");
    }

    /** The locks held now, longest held first. */
    @ReadOperation
    public HeldLocksDescriptor heldLocks() {
        List<HeldLockDescriptor> locks = lockManager.admin().heldLocks().stream()
                .sorted(Comparator.comparing(HeldLock::heldFor).reversed())
                .map(HeldLockDescriptor::of)
                .toList();
        return new HeldLocksDescriptor(locks.size(), lockManager.admin().watchedLeaseCount(), locks);
    }

    /**
     * Who holds {@code key} of lock {@code name} in the store now, whichever instance took it; this instance's holds
     * only when the store cannot say ({@code acrossInstances} false). Count 0 when the key is free.
     *
     * @param key the store key, as {@link #heldLocks()} lists it ({@code <name>:<key>} for the annotation's locks)
     * @throws InvalidEndpointRequestException when {@code key} is not one of lock {@code name}'s keys
     */
    @ReadOperation
    public LockHoldersDescriptor holders(@Selector String name, String key) {
        requireKeyOf(name, key);
        return new LockHoldersDescriptor(name, key, acrossInstances(), lockManager.admin().holders(key));
    }

    /**
     * Frees {@code key} of lock {@code name} in the store whoever holds it, and answers the holders removed (count 0,
     * and nothing counted nor logged, when nobody held it). The holders removed learn at their next renewal that their
     * lease is lost.
     *
     * @param key the store key, as {@link #heldLocks()} lists it ({@code <name>:<key>} for the annotation's locks)
     * @throws InvalidEndpointRequestException when {@code key} is not one of lock {@code name}'s keys
     * @throws UnsupportedOperationException when the store cannot force a release
     */
    @DeleteOperation
    public LockHoldersDescriptor forceRelease(@Selector String name, String key) {
        requireKeyOf(name, key);
        return new LockHoldersDescriptor(name, key, true, forceReleaseIfHeld(name, key));
    }

    /** Whether the store can force a release (and say who holds a key across instances). */
    boolean storeCanForceRelease() {
        return acrossInstances();
    }

    /**
     * The holders a forced release of {@code key} removed; empty, without a forced release (no count, no WARN, no
     * meter series), when nobody holds it.
     */
    List<LockHolder> forceReleaseIfHeld(String name, String key) {
        if (lockManager.admin().holders(key).isEmpty()) {
            return List.of();
        }
        return lockManager.admin().forceRelease(name, key);
    }

    /**
     * Why {@code key} is not one of lock {@code name}'s keys, or null when it is: it starts with {@code <name>:}, as
     * every key the annotation builds, or this instance holds it under that name (a key taken through the API).
     * Keeps a misspelt name from being counted (a meter series) under a lock that does not exist.
     *
     * @throws LockKeyException when the key is blank or too long
     */
    String notAKeyOf(String name, String key) {
        LockManager.validKey(key);
        if (LockKeys.isNamedKeyOf(name, key)
                || lockManager.admin().heldLocks().stream().anyMatch(lock -> lock.lockName().equals(name) && lock.key().equals(key))) {
            return null;
        }
        return "key '" + key + "' is not a key of lock '" + name + "': give the key as GET /actuator/" + ID
                + " lists it (the store key; the annotation's keys of lock '" + name + "' are '" + LockKeys.named(name, "<key>") + "')";
    }

    private void requireKeyOf(String name, String key) {
        String problem;
        try {
            problem = notAKeyOf(name, key);
        } catch (LockKeyException e) {
            problem = e.getMessage();
        }
        if (problem != null) {
            throw new InvalidEndpointRequestException(problem, problem);
        }
    }

    private boolean acrossInstances() {
        return lockManager.capabilities().holderInspection().isPresent();
    }

    /** The name of the store, for a refusal. */
    String storeName() {
        return lockManager.backend().getClass().getSimpleName();
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
     * @param key            the store key ({@code <name>:<key>} for the annotation's locks): the one to give
     *                       {@code GET} and {@code DELETE /actuator/dlock/{name}?key=}
     * @param holderThread   null once the lock belongs to pending asynchronous work
     * @param leaseExpiresIn null, and its milliseconds -1, when the store keeps the lease alive by its session
     * @param fencingToken   null while the holder has not asked for its token, on a store that issues tokens on request
     *                       (Redis exclusive locks); reading the endpoint never issues one
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
     * @param key             the store key, as given
     * @param acrossInstances true when the store said (every instance's holders); false for this instance's only
     */
    public record LockHoldersDescriptor(String name, String key, boolean acrossInstances, int count,
                                        List<LockHolderDescriptor> holders) {

        LockHoldersDescriptor(String name, String key, boolean acrossInstances, List<LockHolder> holders) {
            this(name, key, acrossInstances, holders.size(), holders.stream().map(LockHolderDescriptor::of).toList());
        }
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
