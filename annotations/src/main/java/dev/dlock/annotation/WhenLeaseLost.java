package dev.dlock.annotation;

/** What happens to a locked method's work when its lease is lost while it runs ({@link DistributedLock#whenLeaseLost()}). */
public enum WhenLeaseLost {
    /** The configured default: {@code dlock.when-lease-lost} in Spring Boot, {@link #CONTINUE} unless set. */
    DEFAULT,
    /** The work runs on; the loss is reported (state, listeners, and the release's {@code LockLostException}). */
    CONTINUE,
    /**
     * The work is stopped as soon as the loss is known: a blocking method's thread is interrupted, a
     * {@code CompletableFuture} is cancelled, a {@code Mono} or {@code Flux} subscription is disposed (the caller gets
     * {@code LockLostException}), a Kotlin coroutine is cancelled. Cooperative and late by nature: a fenced write stays the
     * only guarantee that a stale holder's write is refused.
     */
    STOP
}
