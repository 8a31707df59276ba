package dev.dlock.core.spi;

import dev.dlock.core.LockKind;

import java.util.List;

/**
 * Optional ability ({@link BackendCapabilities#holderInspection()}): who holds a key in the store now, whichever JVM
 * took it, and an operator's forced release. The engine decodes each owner token into a
 * {@link dev.dlock.core.LockHolder}.
 */
public interface HolderInspection {

    /**
     * The owners holding {@code key} as {@code kind} in the store now (several for a shared kind), each with its
     * remaining lease; empty when the key is free. Reads only: must not change, extend or mark anything.
     */
    List<StoredHolder> holders(LockKind kind, String key);

    /**
     * Frees {@code key} of {@code kind} whoever holds it, for an operator, and tells waiters as a release does; answers
     * the holders it removed. Their next renewal or release must find the key gone ({@code NOT_OWNER}, never
     * {@code ALREADY_FREE}), which the engine reports to them as a lost lease: a store that tells a repeated release by
     * its fencing counter uses one token up here. Tokens keep rising: the next holder's is larger than every earlier one.
     */
    List<StoredHolder> forceRelease(LockKind kind, String key);

    /**
     * Tells {@code listener} of every forced release of this store, whichever JVM ordered it, with each owner it removed,
     * as soon as the store can: the holder's JVM then ends that lease at once (its waiters take the key) instead of at
     * its next renewal. Called on the store's thread (or the forcing caller's); it must be fast. The default tells
     * nothing: the holder then learns at its next renewal.
     */
    default void addForcedReleaseListener(ForcedReleaseListener listener) {
    }

    /** Stops telling {@code listener} (its manager closed); nothing when it was not added. */
    default void removeForcedReleaseListener(ForcedReleaseListener listener) {
    }

    /** Told of a forced release's removed owner; see {@link #addForcedReleaseListener}. */
    @FunctionalInterface
    interface ForcedReleaseListener {

        /** A forced release removed {@code owner}, which held {@code key}. */
        void forced(String key, String owner);
    }
}
