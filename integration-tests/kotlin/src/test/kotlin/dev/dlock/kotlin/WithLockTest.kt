package dev.dlock.kotlin

import dev.dlock.core.LockLostException
import dev.dlock.core.LockManager
import dev.dlock.core.LockNotAcquiredException
import dev.dlock.core.LockRequest
import dev.dlock.core.inmemory.InMemoryLockBackend
import dev.dlock.testkit.OverlapDetector
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.AfterEach
import org.junit.jupiter.api.Test
import java.time.Duration
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean

/** dlock-kotlin's [withLockSuspending] on the in-memory store, with a second manager playing another JVM. */
class WithLockTest {

    private val backend = InMemoryLockBackend()
    private val locks = LockManager.builder(backend).build()
    private val otherJvm = LockManager.builder(backend).build()

    @AfterEach
    fun close() {
        otherJvm.close()
        locks.close()
    }

    private fun isFree(key: String): Boolean = otherJvm.tryAcquire(key).map { it.close(); true }.orElse(false)

    @Test
    fun aThousandConcurrentBlocksOnTenKeysNeverOverlap(): Unit = runBlocking {
        val detectors = (0 until 10).map { OverlapDetector() }
        val started = System.nanoTime()
        withContext(Dispatchers.Default) {
            (0 until 1000).map { i ->
                async {
                    locks.withLockSuspending("key-${i % 10}", Duration.ofSeconds(60)) {
                        val detector = detectors[i % 10]
                        detector.enter()
                        try {
                            delay(1)
                            detector.incrementUnsafely()
                        } finally {
                            detector.exit()
                        }
                    }
                }
            }.awaitAll()
        }
        println("dlock: 1,000 withLockSuspending blocks on 10 keys took ${TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)} ms")
        detectors.forEach {
            assertThat(it.overlaps()).isZero()
            assertThat(it.counter()).isEqualTo(100)
        }
    }

    @Test
    fun cancellingTheCallerReleasesTheLockItHoldsAndGivesUpTheOneItWaitsFor(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val holder = launch(Dispatchers.Default) {
            locks.withLockSuspending("k", Duration.ofSeconds(5)) {
                entered.complete(Unit)
                delay(Long.MAX_VALUE)
            }
        }
        entered.await()
        val waiter = launch(Dispatchers.Default) { locks.withLockSuspending("k", Duration.ofSeconds(30)) { } }
        delay(50)
        waiter.cancel()
        waiter.join()
        assertThat(isFree("k")).`as`("still held by the holder").isFalse()
        holder.cancel()
        holder.join()
        assertThat(isFree("k")).`as`("free once the holder is cancelled, nothing left for the cancelled waiter").isTrue()
    }

    @Test
    fun theBlocksFailureReachesTheCallerAndTheKeyIsFree(): Unit = runBlocking {
        val failure = runCatching {
            locks.withLockSuspending("boom", Duration.ofSeconds(1)) {
                delay(1)
                throw IllegalStateException("boom")
            }
        }.exceptionOrNull()
        assertThat(failure).isInstanceOf(IllegalStateException::class.java).hasMessage("boom")
        assertThat(isFree("boom")).isTrue()
    }

    @Test
    fun aLostLeaseCancelsTheBlockAndTheCallerGetsLockLostException(): Unit = runBlocking {
        val started = CompletableDeferred<Unit>()
        val cancelled = AtomicBoolean()
        val request = LockRequest.builder("lost").waitTime(Duration.ofSeconds(1)).stopWorkOnLeaseLost(true).build()
        val call = async(Dispatchers.Default) {
            val outcome = runCatching {
                locks.withLockSuspending(request) {
                    started.complete(Unit)
                    try {
                        delay(Long.MAX_VALUE)
                    } catch (e: CancellationException) {
                        cancelled.set(true)
                        throw e
                    }
                }
            }
            delay(1) // the caller itself is not cancelled: it suspends and goes on
            outcome
        }
        started.await()
        assertThat(otherJvm.admin().forceRelease("lost")).hasSize(1)
        val outcome = withTimeout(5_000) { call.await() }
        assertThat(outcome.exceptionOrNull()).isInstanceOf(LockLostException::class.java)
        assertThat(cancelled.get()).isTrue()
    }

    @Test
    fun theDocumentedExampleRuns(): Unit = runBlocking {
        assertThat(recount(locks, "north")).isEqualTo(42)
        assertThat(isFree("stock:north")).isTrue()
    }

    /** Pins what the docs say: no re-entry across coroutines, so a nested call on the same key waits for itself. */
    @Test
    fun aNestedCallOnTheSameKeyIsNotReentrant(): Unit = runBlocking {
        val nested = locks.withLockSuspending("outer", Duration.ofSeconds(1)) {
            runCatching { locks.withLockSuspending("outer", Duration.ofMillis(100)) { "re-entered" } }.exceptionOrNull()
        }
        assertThat(nested).isInstanceOf(LockNotAcquiredException::class.java)
    }
}
