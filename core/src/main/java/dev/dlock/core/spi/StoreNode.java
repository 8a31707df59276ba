package dev.dlock.core.spi;

import java.util.Objects;

/**
 * One node of a lock store, as the renewal grouping names it: the leases of one node are renewed
 * together, and different nodes concurrently, so that a stalled node never delays another's leases.
 *
 * @param name how the store names the node (for example {@code "10.0.0.7:6379"}); also shown in logs
 */
public record StoreNode(String name) {

    /** The node of a store that serves every key from one place. */
    public static final StoreNode SINGLE = new StoreNode("store");

    /** Creates a node; {@code name} must not be null. */
    public StoreNode {
        Objects.requireNonNull(name, "name");
    }

    @Override
    public String toString() {
        return name;
    }
}
