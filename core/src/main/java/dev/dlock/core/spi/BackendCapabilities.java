package dev.dlock.core.spi;

import dev.dlock.core.LockKind;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * What a store can do, as the engine asks it once when a manager is built ({@link LockBackend#capabilities()}).
 * Start from {@link #DEFAULT} and say only what differs: {@code DEFAULT.withModes(EnumSet.allOf(LockKind.Mode.class))}.
 *
 * @param modes   the kinds of lock the store takes; always includes {@link LockKind.Mode#EXCLUSIVE}. The engine refuses
 *                a request of another kind before it reaches the store, the aspect refuses it at startup
 * @param handOff whether the store implements {@link LockBackend#handOff}: an exclusive lease passed straight to the
 *                next holder in the JVM
 * @param fencing whether the store issues fencing tokens; when false (memcached) the tokens it returns mean nothing and
 *                {@code LockHandle.fencingToken()} throws instead of handing one out
 */
public record BackendCapabilities(Set<LockKind.Mode> modes, boolean handOff, boolean fencing) {

    /** Exclusive locks only, fencing tokens, no hand-off: what a store declares unless it says otherwise. */
    public static final BackendCapabilities DEFAULT = new BackendCapabilities(EnumSet.of(LockKind.Mode.EXCLUSIVE), false, true);

    /** Checks that {@code modes} includes exclusive locks, and keeps an unmodifiable copy in declaration order. */
    public BackendCapabilities {
        Objects.requireNonNull(modes, "modes");
        if (!modes.contains(LockKind.Mode.EXCLUSIVE)) {
            throw new IllegalArgumentException("every store takes EXCLUSIVE locks; modes " + modes + " leave it out");
        }
        modes = Collections.unmodifiableSet(EnumSet.copyOf(modes));
    }

    /** These capabilities with {@code modes} as the kinds of lock the store takes. */
    public BackendCapabilities withModes(Set<LockKind.Mode> modes) {
        return new BackendCapabilities(modes, handOff, fencing);
    }

    /** These capabilities with {@link #handOff()} set to {@code handOff}. */
    public BackendCapabilities withHandOff(boolean handOff) {
        return new BackendCapabilities(modes, handOff, fencing);
    }

    /** These capabilities with {@link #fencing()} set to {@code fencing}. */
    public BackendCapabilities withFencing(boolean fencing) {
        return new BackendCapabilities(modes, handOff, fencing);
    }

    /** Whether the store takes locks of {@code kind}. */
    public boolean supports(LockKind kind) {
        return modes.contains(kind.mode());
    }

    /**
     * For a store that takes exclusive locks only: throws the {@link UnsupportedOperationException} that names
     * {@code store} and {@code kind} unless {@code kind} is exclusive. The engine never sends such a request; this
     * guards direct callers.
     */
    public static void requireExclusive(LockBackend store, LockKind kind) {
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            throw new UnsupportedOperationException(store.getClass().getSimpleName() + " cannot take " + kind
                    + " locks; it supports " + store.capabilities().modes());
        }
    }
}
