package dev.dlock.core;

import java.util.Objects;

/**
 * What kind of lock an acquisition takes: exclusive (the default), exclusive in arrival order across
 * JVMs, one side of a read/write lock, or one of a key's permits.
 *
 * <p>Kinds form three separate locks per key, their {@link Family families}: exclusive and fair are one lock (a fair acquisition
 * waits its turn, an exclusive one may barge, neither overlaps the other); read and write are another;
 * permits a third. Use one family per key: a read lock does not exclude a plain exclusive lock on the
 * same key. Each store says which kinds it takes (docs/lock-kinds.md); the manager refuses another kind before
 * the store is asked.
 */
public final class LockKind {

    /** The lock's semantics. */
    public enum Mode {
        /** One holder at a time; waiters of one JVM in arrival order, across JVMs whoever asks first when the key frees. */
        EXCLUSIVE,
        /** One holder at a time, in arrival order across JVMs; a waiter that stops asking loses its place after a bounded time. */
        FAIR,
        /** Many holders at once, none while a writer holds the key; a waiting writer stops new readers. */
        READ,
        /** One holder at a time, and no reader beside it. */
        WRITE,
        /** Up to {@link LockKind#permits()} holders at once, each with its own lease. */
        PERMITS
    }

    /**
     * A key's separate locks: the kinds of one family exclude each other as their modes say; kinds of different
     * families never meet.
     */
    public enum Family {
        /** {@link Mode#EXCLUSIVE} and {@link Mode#FAIR}: one lock, whose fair waiters queue and exclusive ones may barge. */
        EXCLUSIVE,
        /** {@link Mode#READ} and {@link Mode#WRITE}: the two sides of one read/write lock. */
        READ_WRITE,
        /** {@link Mode#PERMITS}: the key's set of permits. */
        PERMITS
    }

    /** The default: one holder at a time. */
    public static final LockKind EXCLUSIVE = new LockKind(Mode.EXCLUSIVE, 1);
    /** One holder at a time, first come first served across JVMs. */
    public static final LockKind FAIR = new LockKind(Mode.FAIR, 1);
    /** The shared side of a read/write lock. */
    public static final LockKind READ = new LockKind(Mode.READ, Integer.MAX_VALUE);
    /** The exclusive side of a read/write lock. */
    public static final LockKind WRITE = new LockKind(Mode.WRITE, 1);

    private final Mode mode;
    private final int permits;

    private LockKind(Mode mode, int permits) {
        this.mode = mode;
        this.permits = permits;
    }

    /**
     * A semaphore: up to {@code permits} holders of the key at once. Every user of one key must ask for the
     * same number.
     *
     * @throws IllegalArgumentException when {@code permits} is below 1
     */
    public static LockKind permits(int permits) {
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1, was " + permits);
        }
        return new LockKind(Mode.PERMITS, permits);
    }

    /** The kind with {@code mode}; for {@link Mode#PERMITS} use {@link #permits(int)}. */
    public static LockKind of(Mode mode) {
        return switch (Objects.requireNonNull(mode, "mode")) {
            case EXCLUSIVE -> EXCLUSIVE;
            case FAIR -> FAIR;
            case READ -> READ;
            case WRITE -> WRITE;
            case PERMITS -> throw new IllegalArgumentException("a PERMITS kind needs its number of permits: LockKind.permits(n)");
        };
    }

    /** The lock's semantics. */
    public Mode mode() {
        return mode;
    }

    /** How many holders the key may have at once: 1 for the exclusive kinds, unbounded for {@link Mode#READ}. */
    public int permits() {
        return permits;
    }

    /** True when several holders may hold the key at once ({@link Mode#READ}, {@link Mode#PERMITS}). */
    public boolean shared() {
        return mode == Mode.READ || mode == Mode.PERMITS;
    }

    /** Which of a key's separate locks this kind takes: kinds of one family exclude each other as their modes say. */
    public Family family() {
        return switch (mode) {
            case EXCLUSIVE, FAIR -> Family.EXCLUSIVE;
            case READ, WRITE -> Family.READ_WRITE;
            case PERMITS -> Family.PERMITS;
        };
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof LockKind kind && kind.mode == mode && kind.permits == permits;
    }

    @Override
    public int hashCode() {
        return mode.hashCode() * 31 + permits;
    }

    @Override
    public String toString() {
        return mode == Mode.PERMITS ? "PERMITS(" + permits + ")" : mode.name();
    }
}
