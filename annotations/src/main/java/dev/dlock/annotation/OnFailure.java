package dev.dlock.annotation;

/** What a {@link DistributedLock} method does when its lock is not acquired (wait expired, aborted, interrupted). */
public enum OnFailure {

    /** Throws {@code dev.dlock.core.LockNotAcquiredException}, naming the lock and the key. */
    THROW,

    /**
     * Does not run the method and returns an empty value of its return type: {@code null},
     * {@code Optional.empty()}, an empty collection or map, a primitive's default, a completed
     * future of {@code null}, or an empty {@code Mono}/{@code Flux}.
     */
    SKIP,

    /** Calls the method named by {@link DistributedLock#fallback()} on the same bean instead. */
    FALLBACK
}
