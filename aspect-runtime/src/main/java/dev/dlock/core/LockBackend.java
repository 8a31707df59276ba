package dev.dlock.core;

import java.util.List;
import java.util.Optional;

/**
 * The lock store SPI: one implementation per store (Redis, ...), used only by {@link LockManager}.
 *
 * <p>Every write compares the owner token first and is atomic in the store. "Not acquired",
 * "not owner" and "lost" are normal results, never exceptions; an implementation throws
 * {@link LockBackendException} only when the store cannot be reached or answers with an error.
 * Keys passed here are logical keys, already validated by the engine; the backend maps them to
 * its own key layout.
 */
public interface LockBackend extends AutoCloseable {

    /** Takes {@code key} for {@code owner} for {@code leaseMillis}, or reports who holds it for how long. */
    AcquireResult tryAcquire(String key, String owner, long leaseMillis);

    /** Releases {@code key} if, and only if, {@code owner} holds it; publishes a release notice when it does. */
    ReleaseResult release(String key, String owner);

    /**
     * Extends every lease of the batch whose owner still matches, in one call to the store.
     *
     * <p>The engine only passes batches of at most {@link #maxRenewalBatchSize()} entries that share
     * one {@link #renewalGroup(String)}. The result has one entry per request, in order.
     */
    List<RenewalResult> renew(List<LeaseRenewal> batch);

    /** Leases whose keys map to different groups are never renewed in one call (for example: cluster slots). */
    default Object renewalGroup(String key) {
        return "";
    }

    /** The largest batch the store accepts in one {@link #renew} call; the engine may send smaller ones. */
    default int maxRenewalBatchSize() {
        return Integer.MAX_VALUE;
    }

    /** Release notices for waiters, when the store can push them; empty when waiters must poll. */
    default Optional<ReleaseNotices> releaseNotices() {
        return Optional.empty();
    }

    /** Checks that the store answers; returns the round trip in nanoseconds, throws {@link LockBackendException} if not. */
    long ping();

    /** Frees the backend's own resources (subscriber connection, threads); never the client it was given. */
    @Override
    default void close() {
    }
}
