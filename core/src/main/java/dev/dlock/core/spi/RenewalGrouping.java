package dev.dlock.core.spi;

/**
 * Optional ability ({@link BackendCapabilities#renewalGrouping()}): which node serves a key and how many leases
 * one renew call may carry. Without it, the engine renews all leases as one node, in batches of the
 * manager's configured size.
 */
public interface RenewalGrouping {

    /** The node that serves {@code key}; every lease of a renew batch has the same node. */
    StoreNode nodeOf(String key);

    /** The most leases one {@link LockBackend#renew} call may carry. */
    int maxBatchSize();
}
