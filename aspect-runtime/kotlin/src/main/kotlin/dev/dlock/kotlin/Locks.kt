package dev.dlock.kotlin

import dev.dlock.core.LockHandle
import dev.dlock.core.LockLostException
import dev.dlock.core.LockManager
import dev.dlock.core.LockRequest
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.NonCancellable
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.job
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import org.slf4j.LoggerFactory
import java.time.Duration
import java.util.concurrent.CompletionException
import java.util.concurrent.atomic.AtomicReference
import kotlin.coroutines.resumeWithException

private val log = LoggerFactory.getLogger("dev.dlock.kotlin.Locks")

/**
 * Runs [block] holding the lock [request] describes, and releases it however [block] ends: it returns, throws, or its
 * coroutine is cancelled.
 *
 * Waiting for the lock suspends and parks no thread (the engine's [LockManager.acquireAsync]); cancelling the caller
 * while it waits gives the attempt up, and a lock taken just then is released. The release is a store call: it runs on
 * [Dispatchers.IO], not on the caller's dispatcher, and also when the caller was cancelled. When the lease was lost
 * meanwhile, or the release's outcome is unknown, the caller gets that exception ([LockLostException],
 * `LockBackendException`) instead of the result; when [block] failed, its exception stays and the release problem is
 * added to it as suppressed.
 *
 * With [LockRequest.stopWorkOnLeaseLost], a lost lease cancels [block] at once (its next suspension point throws), and
 * the caller gets [LockLostException] rather than a cancellation; the caller's own coroutine is not cancelled.
 *
 * Not re-entrant: the engine's re-entry is by thread, and a coroutine is not a thread. A `withLockSuspending` on the
 * same key inside [block] waits for the outer one, and fails when its wait time runs out; pass what needs the lock down
 * instead.
 *
 * Named apart from the blocking [LockManager.withLock], which as a member would always win over an extension of the
 * same name in Kotlin (and whose lambda cannot suspend).
 */
public suspend fun <T> LockManager.withLockSuspending(request: LockRequest, block: suspend () -> T): T {
    val handle = acquireSuspending(this, request)
    var failure: Throwable? = null
    try {
        return if (request.stopWorkOnLeaseLost()) stoppedOnLoss(handle, block) else block()
    } catch (e: Throwable) {
        failure = e
        throw e
    } finally {
        release(handle, failure)
    }
}

/** [withLockSuspending] on [key] (the lock manager's key, `<name>:<key>` for a named lock), waiting at most [waitTime]. */
public suspend fun <T> LockManager.withLockSuspending(key: String, waitTime: Duration, block: suspend () -> T): T =
    withLockSuspending(LockRequest.builder(key).waitTime(waitTime).build(), block)

/** Acquires without blocking: suspends until the engine's future completes, and cancels it when the caller goes. */
private suspend fun acquireSuspending(manager: LockManager, request: LockRequest): LockHandle =
    suspendCancellableCoroutine { continuation ->
        val acquiring = manager.acquireAsync(request)
        // The engine releases a lock that lands after its future was cancelled.
        continuation.invokeOnCancellation { acquiring.cancel(false) }
        acquiring.whenComplete { handle, failure ->
            if (failure == null) {
                // The caller may be cancelled just as the lock arrives: the dropped handle is released here.
                continuation.resume(handle) { _ -> releaseDropped(handle) }
            } else {
                continuation.resumeWithException(if (failure is CompletionException && failure.cause != null) failure.cause!! else failure)
            }
        }
    }

/**
 * Runs [block] in a scope of its own that a lost lease cancels: only the section stops, and its caller learns why
 * from the [LockLostException] instead of a bare cancellation.
 */
private suspend fun <T> stoppedOnLoss(handle: LockHandle, block: suspend () -> T): T {
    val lost = AtomicReference<LockLostException?>()
    try {
        return coroutineScope {
            val section = coroutineContext.job
            handle.onLeaseLost {
                val loss = LockLostException(handle.lockName(), handle.key(),
                    "the lease was lost while the block of withLockSuspending ran, so it was cancelled (stopWorkOnLeaseLost)")
                lost.set(loss)
                section.cancel(CancellationException(loss.message, loss))
            }
            block()
        }
    } catch (e: CancellationException) {
        throw lost.get() ?: e
    }
}

private suspend fun release(handle: LockHandle, failure: Throwable?) {
    // A blocking store call: off the caller's dispatcher, and done even when the caller is being cancelled.
    val problem = withContext(NonCancellable + Dispatchers.IO) {
        try {
            handle.close()
            null
        } catch (e: RuntimeException) {
            e
        }
    }
    if (problem != null) {
        if (failure != null) failure.addSuppressed(problem) else throw problem
    }
}

private fun releaseDropped(handle: LockHandle) {
    try {
        handle.close()
    } catch (e: RuntimeException) {
        log.warn("dlock: releasing lock '{}' for a cancelled withLockSuspending failed", handle.lockName(), e)
    }
}
