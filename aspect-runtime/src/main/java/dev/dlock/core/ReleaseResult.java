package dev.dlock.core;

/** What the store answered to a release. */
public enum ReleaseResult {
    /** The owner matched; the key is deleted and a release notice was published. */
    RELEASED,
    /** The key is gone or held by another owner; nothing was deleted. */
    NOT_OWNER
}
