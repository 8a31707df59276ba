package dev.dlock.boot.observation;

import java.util.Objects;

import dev.dlock.core.HeldLock;
import dev.dlock.core.LockKind;
import io.micrometer.observation.Observation;

/**
 * What one of dlock's observations knows about its acquisition, for the conventions that name and tag it: the lock's
 * static name, the key, the kind and, once the store issued it, the fencing token.
 */
public abstract class LockObservationContext extends Observation.Context {

    private final String lockName;
    private final String key;
    private final LockKind kind;
    private volatile long fencingToken = HeldLock.TOKEN_NOT_ISSUED;

    /** The context of an observation of {@code key} under lock {@code lockName}, taken as {@code kind}. */
    protected LockObservationContext(String lockName, String key, LockKind kind) {
        this.lockName = Objects.requireNonNull(lockName, "lockName");
        this.key = Objects.requireNonNull(key, "key");
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    /** The lock's static name: bounded, a low-cardinality tag. */
    public String getLockName() {
        return lockName;
    }

    /** The resolved key: unbounded, never a meter tag. */
    public String getKey() {
        return key;
    }

    /** The kind of lock asked for. */
    public LockKind getKind() {
        return kind;
    }

    /**
     * The fencing token the store issued with the acquisition, or {@link HeldLock#TOKEN_NOT_ISSUED} while it has not
     * (a Redis exclusive lock's is issued when the holder first asks; observing never asks).
     */
    public long getFencingToken() {
        return fencingToken;
    }

    /** Records the fencing token issued with the acquisition. */
    public void setFencingToken(long fencingToken) {
        this.fencingToken = fencingToken;
    }
}
