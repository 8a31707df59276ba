package dev.dlock.annotation;

/** Which side of a key's lock a {@link DistributedLock} method takes. */
public enum LockMode {
    /** One holder at a time (the default). */
    EXCLUSIVE,
    /** Shared with other readers of the key; excluded by a writer, and held back while a writer waits. */
    READ,
    /** One holder at a time and no reader beside it: the exclusive side of the key's read/write lock. */
    WRITE
}
