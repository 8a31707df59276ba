package dev.dlock.kotlin

import dev.dlock.annotation.DistributedLock
import dev.dlock.annotation.FencingToken
import dev.dlock.annotation.OnFailure
import dev.dlock.annotation.WhenLeaseLost
import dev.dlock.aspect.LockContext
import dev.dlock.core.LockManager
import dev.dlock.core.LockNotAcquiredException
import dev.dlock.core.LockRequest
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.delay
import kotlinx.coroutines.withContext
import java.time.Duration
import java.util.concurrent.ConcurrentHashMap

// The examples of docs/reactive.md#kotlin, compiled and run by SuspendFunctionsTest and WithLockTest: keep the two in sync.

/** Where the examples write: one value per order, refusing a write with an older fencing token than the last. */
open class Shipments {
    private val tokens = ConcurrentHashMap<String, Long>()

    open fun write(orderId: String, token: Long): Boolean {
        var accepted = false
        tokens.compute(orderId) { _, last -> if (last == null || token > last) token.also { accepted = true } else last }
        return accepted
    }
}

// docs: suspend-function
/** A suspend function under @DistributedLock: locked from the call until its coroutine ends. */
open class ShippingService(private val shipments: Shipments) {

    @DistributedLock(name = "shipment", key = "#orderId", waitTime = "5s", whenLeaseLost = WhenLeaseLost.STOP)
    open suspend fun ship(orderId: String, @FencingToken token: Long): Boolean {
        delay(10)                                        // suspends holding the lock
        val same = withContext(Dispatchers.IO) {         // resumes on another thread, still holding it
            LockContext.current().fencingToken()         // the LockContext goes along
        }
        check(same == token)
        return shipments.write(orderId, token)
    }

    @DistributedLock(name = "shipment", key = "#orderId", waitTime = "0s",
        onFailure = OnFailure.FALLBACK, fallback = "shipLater")
    open suspend fun shipIfFree(orderId: String): String {
        delay(10)
        return "shipped $orderId"
    }

    /** The fallback of a suspend function is a suspend function: same parameters, the failure optional. */
    open suspend fun shipLater(orderId: String, failure: LockNotAcquiredException): String {
        delay(1)
        return "queued $orderId"
    }
}
// docs: end

// docs: with-lock
/** The programmatic form: acquiring suspends, the block may suspend, and the lock goes however the block ends. */
suspend fun recount(locks: LockManager, warehouse: String): Int =
    locks.withLockSuspending(
        LockRequest.builder("stock:$warehouse")
            .waitTime(Duration.ofSeconds(5))
            .stopWorkOnLeaseLost(true)                   // a lost lease cancels the block: LockLostException
            .build()
    ) {
        delay(10)
        42
    }
// docs: end
