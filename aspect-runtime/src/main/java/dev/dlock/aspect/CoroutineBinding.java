package dev.dlock.aspect;

import org.jspecify.annotations.Nullable;

/**
 * Binds the {@link LockContext} of a locked Kotlin suspend function to every resumption of its coroutine. dlock-kotlin
 * implements it and {@link java.util.ServiceLoader} finds it, so that this module needs no Kotlin of its own.
 */
public interface CoroutineBinding {

    /**
     * The continuation to call the suspend function with in place of {@code continuation}: one whose coroutine context
     * is the same plus an element that runs {@code binding} around each resumption of the coroutine that runs the
     * function, on whichever thread resumes it (Spring starts that coroutine with this continuation's context).
     *
     * @param continuation the caller's {@code kotlin.coroutines.Continuation}, the function's last argument
     */
    Object bind(Object continuation, ThreadBinding binding);

    /** Sets a thread's state for one resumption of a coroutine, and puts back what was there. */
    interface ThreadBinding {
        /** Binds the state to the calling thread; returns what it replaced. */
        @Nullable Object enter();

        /** Puts back what {@link #enter()} replaced. */
        void exit(@Nullable Object previous);
    }
}
