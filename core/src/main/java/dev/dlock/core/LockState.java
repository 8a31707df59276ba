package dev.dlock.core;

/** Where a lock handle stands. */
public enum LockState {
    /** Acquired and, as far as this JVM knows, still owned. */
    HELD,
    /** Released by its holder. */
    RELEASED,
    /** The lease ended, or may have ended, before release: expired, deleted, taken over, or no renewal confirmed in time. */
    LOST
}
