package dev.dlock.core.spi;

/** What the store answered to a release. */
public enum ReleaseResult {
    /** The owner matched; the key is deleted now and waiters were told it is free. */
    RELEASED,
    /**
     * The key was already free and nobody acquired it after this owner, so no other holder can have
     * overlapped: an earlier attempt of the same release freed it (its reply was lost, or the client
     * retried), or, from a store that can tell it by its token sequence, the key ran out with nobody taking it
     * since (a store that cannot answers {@link #NOT_OWNER} then; see {@link LockBackend#release}). The engine counts it
     * as a release while the lease surely lived (only its own earlier attempt explains it then), and
     * as a lost lease after that.
     */
    ALREADY_FREE,
    /**
     * The key is held by another owner, or another owner acquired it since, or the store lost its record (for a read
     * lease or permit: the store no longer holds the share and has no record of this owner's own release): the lease
     * was lost.
     */
    NOT_OWNER
}
