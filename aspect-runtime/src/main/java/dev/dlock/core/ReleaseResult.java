package dev.dlock.core;

/** What the store answered to a release. */
public enum ReleaseResult {
    /** The owner matched; the key is deleted now and waiters were told it is free. */
    RELEASED,
    /**
     * The key was already free and nobody acquired it after this owner: an earlier attempt of the
     * same release freed it (its reply was lost, or the client retried), or the lease ran out with
     * nobody taking the key since. Safe to repeat: the engine tells the two apart by the lease's expiry.
     */
    ALREADY_FREE,
    /** The key is held by another owner, or another owner acquired it since, or the store lost its record: the lease was lost. */
    NOT_OWNER
}
