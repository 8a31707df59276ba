package dev.dlock.core.spi;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The lock store SPI: one implementation per store, used only by {@link LockManager}. Required:
 * acquire, release, renew, ping and close; renewal grouping, release notices and session-kept
 * leases are optional capabilities the engine uses when a store offers them.
 *
 * <p>Every write compares the owner token first and is atomic in the store. "Not acquired",
 * "not owner" and "lost" are normal results, never exceptions; an implementation throws
 * {@link LockBackendException} only when the store cannot be reached or answers with an error.
 * Keys passed here are logical keys, already validated by the engine; the backend maps them to
 * its own key layout.
 */
public interface LockBackend extends AutoCloseable {

    /**
     * Takes {@code key} for {@code owner} for {@code leaseMillis}, or reports who holds it for how long.
     *
     * <p>Must be idempotent for its owner: a client library may run the same call twice after a lost
     * reply, so when {@code key} is already held by {@code owner} the answer is {@code Acquired} (lease
     * extended to {@code leaseMillis}, fencing token larger than every one issued before), never "held".
     */
    AcquireResult tryAcquire(String key, String owner, long leaseMillis);

    /**
     * Releases {@code key} if, and only if, {@code owner} holds it, and tells waiters it is free.
     *
     * <p>Must be idempotent: when the key is already free and no acquisition happened after the one
     * that issued {@code fencingToken}, the answer is {@link ReleaseResult#ALREADY_FREE}, so that a
     * repeated release (lost reply, client retry) is never mistaken for a lost lease.
     */
    ReleaseResult release(String key, String owner, long fencingToken);

    /**
     * Extends every lease of the batch whose owner still matches, in one call to the store.
     *
     * <p>The engine only passes batches within the {@link #renewalGrouping() grouping}'s batch size
     * whose leases share one node, and may call this from several threads at once for different
     * nodes. The result has one entry per request, in order; each entry names its lock's kind (only kinds the
     * store {@link #supportedModes() supports}). Never called when the backend offers
     * {@link #sessionLeases() session-kept leases}.
     */
    List<RenewalResult> renew(List<LeaseRenewal> batch);

    /**
     * Optional capability: the kinds of lock this store can take besides {@link LockKind.Mode#EXCLUSIVE}.
     * The engine refuses a request of another kind before it reaches the store; the aspect refuses it at
     * startup. A store that supports more overrides the three kind-taking methods below.
     */
    default Set<LockKind.Mode> supportedModes() {
        return EnumSet.of(LockKind.Mode.EXCLUSIVE);
    }

    /**
     * {@link #tryAcquire(String, String, long)} for a lock of {@code kind}: for a shared kind, "held" means
     * the key has no free share (or a writer holds or awaits it); the remaining TTL tells the caller when to
     * ask again at the latest (a fair or writer's wait keeps its place only while it asks again in time).
     */
    default AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        requireExclusive(kind);
        return tryAcquire(key, owner, leaseMillis);
    }

    /** {@link #release(String, String, long)} for a lock of {@code kind}. */
    default ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        requireExclusive(kind);
        return release(key, owner, fencingToken);
    }

    /** {@link #withdraw(String, String)} for a lock of {@code kind}: a fair waiter or a waiting writer gives its place back. */
    default void withdraw(LockKind kind, String key, String owner) {
        if (kind.mode() == LockKind.Mode.EXCLUSIVE) {
            withdraw(key, owner);
        }
    }

    private void requireExclusive(LockKind kind) {
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot take " + kind + " locks; it supports "
                    + supportedModes());
        }
    }

    /**
     * Optional capability: which node serves a key, and the largest renew batch. Leases of one node
     * are renewed together and different nodes concurrently. Empty (the default): one node, batches
     * of the manager's size.
     */
    default Optional<RenewalGrouping> renewalGrouping() {
        return Optional.empty();
    }

    /** Optional capability: release notices for waiters, when the store can push them; empty when waiters must poll. */
    default Optional<ReleaseNotices> releaseNotices() {
        return Optional.empty();
    }

    /**
     * Optional capability: the store keeps leases alive while the backend's session lives, and reports
     * lost ones; the engine then sends no renewals. Empty (the default): leases expire unless renewed.
     */
    default Optional<SessionLeases> sessionLeases() {
        return Optional.empty();
    }

    /**
     * Gives up the place {@code owner} keeps in {@code key}'s queue between attempts, for a store that
     * queues waiters (ZooKeeper); the engine calls it once when an acquisition ends without the key
     * (wait over, aborted, interrupted, or failed). Must not throw. Default: nothing, the store keeps no place.
     */
    default void withdraw(String key, String owner) {
    }

    /**
     * Optional capability: passes {@code owner}'s exclusive lease on {@code key} to the next holder in this JVM
     * in one call, instead of a release and an acquisition: the key stays taken by {@code owner} (the engine
     * keeps local holders apart), and a fresh fencing token is issued as for an acquisition. When
     * {@code leaseMillis} is positive the lease is set to it; 0 keeps the store's expiry as it is. Answers with the
     * token and whether another owner asked for the key meanwhile, or {@link HandOffResult#NOT_HELD} when
     * {@code owner} no longer holds it. Only called when {@link #supportsHandOff()}; a failure throws
     * {@link LockBackendException} with the outcome unknown.
     */
    default HandOffResult handOff(String key, String owner, long leaseMillis) {
        throw new UnsupportedOperationException(getClass().getName() + " does not hand leases over");
    }

    /** Whether {@link #handOff} is supported; false by default. */
    default boolean supportsHandOff() {
        return false;
    }

    /**
     * Whether the store issues fencing tokens. False for a store that cannot (memcached): the tokens it
     * returns mean nothing, and {@link LockHandle#fencingToken()} throws instead of handing one out.
     */
    default boolean supportsFencing() {
        return true;
    }

    /**
     * Optional capability: reading who holds a key in the store (any JVM's holder) and an operator's forced release.
     * Empty (the default): the store cannot say, and {@code LockManager.holders} answers with this JVM's holds only.
     */
    default Optional<HolderInspection> holderInspection() {
        return Optional.empty();
    }

    /** Checks that the store answers; returns the round trip in nanoseconds, throws {@link LockBackendException} if not. */
    long ping();

    /** Frees the backend's own resources (subscriber connection, threads); never the client it was given. */
    @Override
    default void close() {
    }
}
