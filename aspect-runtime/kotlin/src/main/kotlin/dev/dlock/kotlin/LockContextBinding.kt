package dev.dlock.kotlin

import dev.dlock.aspect.CoroutineBinding
import kotlinx.coroutines.ThreadContextElement
import kotlin.coroutines.Continuation
import kotlin.coroutines.CoroutineContext

/**
 * dlock-spring's [CoroutineBinding], found by `ServiceLoader`: a `@DistributedLock` suspend function's coroutine binds
 * its `LockContext` on each resumption, whichever thread resumes it. Not for direct use.
 */
public class LockContextBinding : CoroutineBinding {

    override fun bind(continuation: Any, binding: CoroutineBinding.ThreadBinding): Any {
        @Suppress("UNCHECKED_CAST")
        val caller = continuation as Continuation<Any?>
        // Spring starts the function's coroutine in this continuation's context (less its Job); the element goes with
        // it into every child and withContext of the function.
        val context = caller.context + BindingElement(binding)
        return object : Continuation<Any?> {
            override val context: CoroutineContext = context

            override fun resumeWith(result: Result<Any?>) = caller.resumeWith(result)
        }
    }
}

/** Binds the state on each resumption of the coroutine that carries it, and puts back the thread's own after it. */
private class BindingElement(private val binding: CoroutineBinding.ThreadBinding) : ThreadContextElement<Any?> {
    companion object Key : CoroutineContext.Key<BindingElement>

    override val key: CoroutineContext.Key<*> get() = Key

    override fun updateThreadContext(context: CoroutineContext): Any? = binding.enter()

    override fun restoreThreadContext(context: CoroutineContext, oldState: Any?) = binding.exit(oldState)
}
