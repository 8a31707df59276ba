package dev.dlock.core;

import org.jspecify.annotations.Nullable;

/**
 * Work run while a lock is held, by {@link LockManager#withLock}. Any {@code Callable}-shaped lambda
 * fits; unlike {@code Callable}, its checked exception type passes through to the caller as declared.
 */
@FunctionalInterface
public interface LockCallback<T extends @Nullable Object, E extends Exception> {

    /** Runs the critical section. */
    T call() throws E;
}
