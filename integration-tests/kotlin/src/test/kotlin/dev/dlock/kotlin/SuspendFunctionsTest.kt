package dev.dlock.kotlin

import dev.dlock.annotation.DistributedLock
import dev.dlock.annotation.FencingToken
import dev.dlock.annotation.OnFailure
import dev.dlock.annotation.WhenLeaseLost
import dev.dlock.aspect.EnableDistributedLocks
import dev.dlock.aspect.LockContext
import dev.dlock.core.LockLostException
import dev.dlock.core.LockManager
import dev.dlock.core.LockNotAcquiredException
import dev.dlock.core.inmemory.InMemoryLockBackend
import dev.dlock.testkit.OverlapDetector
import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asCoroutineDispatcher
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.delay
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.withTimeoutOrNull
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.assertThatThrownBy
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.springframework.context.annotation.AnnotationConfigApplicationContext
import org.springframework.context.annotation.Bean
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.EnableAspectJAutoProxy
import org.springframework.core.SpringVersion
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.Executors
import java.util.concurrent.ThreadFactory
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicBoolean
import java.util.concurrent.atomic.AtomicInteger

/** A Kotlin bean whose locked suspend functions suspend while they hold their lock. */
open class Stock {
    // open: the bean is a CGLIB proxy, and a final getter would read the proxy's own empty field.
    open val detectors = ConcurrentHashMap<String, OverlapDetector>()
    open val cancelled = AtomicBoolean()

    @DistributedLock(name = "stock", key = "#sku", waitTime = "60s")
    open suspend fun reserve(sku: String): String {
        val detector = detectors.computeIfAbsent(sku) { OverlapDetector() }
        detector.enter()
        try {
            delay(1)
            detector.incrementUnsafely()
        } finally {
            detector.exit()
        }
        return sku
    }

    /** Holds the key until [release] completes (or the caller is cancelled). */
    @DistributedLock(name = "stock", key = "#sku", waitTime = "60s")
    open suspend fun hold(sku: String, entered: CompletableDeferred<Unit>, release: CompletableDeferred<Unit>) {
        entered.complete(Unit)
        release.await()
    }

    /** Takes the key only if it is free right now: null otherwise. */
    @DistributedLock(name = "stock", key = "#sku", waitTime = "0s", onFailure = OnFailure.SKIP)
    open suspend fun ifFree(sku: String): String? {
        delay(1)
        return sku
    }

    @DistributedLock(name = "stock", key = "#sku", waitTime = "60s", abortIf = "#stop.get()")
    open suspend fun unlessStopped(sku: String, stop: AtomicBoolean): String = sku

    /** Which threads ran it, and the LockContext's token seen on each. */
    @DistributedLock(name = "stock", key = "#sku", waitTime = "10s")
    open suspend fun hopThreads(sku: String, @FencingToken token: Long, elsewhere: kotlinx.coroutines.CoroutineDispatcher): List<Any> {
        val first = Thread.currentThread()
        val before = LockContext.current().fencingToken()
        val (second, during) = withContext(elsewhere) {
            delay(5)
            Thread.currentThread() to LockContext.current().fencingToken()
        }
        delay(5)
        val after = LockContext.current().fencingToken()
        return listOf(first, second, token, before, during, after, LockContext.current().key())
    }

    @DistributedLock(name = "job", key = "#id", waitTime = "5s", whenLeaseLost = WhenLeaseLost.STOP)
    open suspend fun runUntilStopped(id: String, started: CompletableDeferred<Unit>) {
        started.complete(Unit)
        try {
            delay(Long.MAX_VALUE)
        } catch (e: CancellationException) {
            cancelled.set(true)
            throw e
        }
    }
}

@Configuration(proxyBeanMethods = false)
@EnableDistributedLocks
@EnableAspectJAutoProxy(proxyTargetClass = true)
open class SuspendLocking {
    @Bean
    open fun backend() = InMemoryLockBackend()

    @Bean(destroyMethod = "close")
    open fun lockManager(backend: InMemoryLockBackend): LockManager = LockManager.builder(backend).build()

    @Bean
    open fun stock() = Stock()

    @Bean
    open fun shipments() = Shipments()

    @Bean
    open fun shippingService(shipments: Shipments) = ShippingService(shipments)
}

/**
 * `@DistributedLock` on Kotlin suspend functions through Spring AOP, on the in-memory store: the lock is held from the
 * call until the coroutine completes, fails or is cancelled, across suspensions and thread hops; waiting suspends.
 * Runs on Spring 7 here and on Spring 6.2 in integration-tests/kotlin-boot3 (same sources).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SuspendFunctionsTest {

    private lateinit var context: AnnotationConfigApplicationContext
    private lateinit var stock: Stock
    private lateinit var otherJvm: LockManager

    @BeforeAll
    fun start() {
        context = AnnotationConfigApplicationContext(SuspendLocking::class.java)
        stock = context.getBean(Stock::class.java)
        otherJvm = LockManager.builder(context.getBean(InMemoryLockBackend::class.java)).build()
    }

    @AfterAll
    fun stop() {
        otherJvm.close()
        context.close()
    }

    @Test
    fun runsOnTheExpectedSpringLine() {
        val expected = System.getProperty("dlock.expected.spring.line")
        if (expected != null) {
            assertThat(SpringVersion.getVersion()).startsWith(expected)
        }
    }

    @Test
    fun aThousandConcurrentSuspendCallsOnTenKeysNeverOverlap(): Unit = runBlocking {
        val started = System.nanoTime()
        withContext(Dispatchers.Default) {
            (0 until 1000).map { i -> async { stock.reserve("sku-${i % 10}") } }.awaitAll()
        }
        val millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started)
        println("dlock: 1,000 locked suspend calls on 10 keys took $millis ms")
        val mine = stock.detectors.filterKeys { it.startsWith("sku-") }
        assertThat(mine).hasSize(10)
        mine.forEach { (sku, detector) ->
            assertThat(detector.overlaps()).`as`("overlapping sections on $sku").isZero()
            assertThat(detector.maxInside()).isEqualTo(1)
            assertThat(detector.counter()).isEqualTo(100)
        }
    }

    @Test
    fun cancellingTheCallersScopeReleasesTheLock(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val holder = launch(Dispatchers.Default) { stock.hold("cancel-1", entered, CompletableDeferred()) }
        entered.await()
        assertThat(stock.ifFree("cancel-1")).`as`("held by the suspended section").isNull()
        val cancelledAt = System.nanoTime()
        holder.cancel()
        holder.join()
        val joinedAt = System.nanoTime()
        assertThat(freeWithin("cancel-1", 2_000)).`as`("free after the cancellation").isTrue()
        println("dlock: join ${TimeUnit.NANOSECONDS.toMillis(joinedAt - cancelledAt)} ms")
        println("dlock: key free ${TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cancelledAt)} ms after job.cancel()")

        // The same through withTimeout around the call.
        val timedOut = CompletableDeferred<Unit>()
        assertThatThrownBy {
            runBlocking { withTimeout(200) { stock.hold("cancel-2", timedOut, CompletableDeferred()) } }
        }.isInstanceOf(CancellationException::class.java)
        assertThat(timedOut.isCompleted).isTrue()
        assertThat(freeWithin("cancel-2", 2_000)).isTrue()
    }

    @Test
    fun waitersSuspendWithoutParkingADispatcherThread(): Unit = runBlocking {
        val counter = AtomicInteger()
        val pool = Executors.newFixedThreadPool(2, ThreadFactory { task -> Thread(task, "waiters-${counter.incrementAndGet()}") })
        val waiters = pool.asCoroutineDispatcher()
        try {
            val entered = CompletableDeferred<Unit>()
            val release = CompletableDeferred<Unit>()
            val holder = launch(Dispatchers.Default) { stock.hold("hot", entered, release) }
            entered.await()
            val calls = (1..50).map { async(waiters) { stock.reserve("hot") } }
            delay(300) // every waiter has asked by now (the pool has nothing else to do)
            val threads = Thread.getAllStackTraces().keys.filter { it.name.startsWith("waiters-") }
            assertThat(threads).hasSize(2)
            repeat(20) {
                for (thread in threads) {
                    val frames = thread.stackTrace
                    assertThat(frames.filter { it.className.startsWith("dev.dlock") })
                        .`as`("dlock frames on ${thread.name} (${thread.state})").isEmpty()
                    assertThat(frames.filter {
                        it.className.startsWith("java.util.concurrent.CompletableFuture") && (it.methodName == "get" || it.methodName == "join")
                    }).`as`("a future waited on by ${thread.name}").isEmpty()
                    assertThat(frames.any { it.methodName == "getTask" && it.className.endsWith("ThreadPoolExecutor") })
                        .`as`("${thread.name} idle in its pool's queue").isTrue()
                }
                delay(10)
            }
            // The two threads still serve other work while 50 coroutines wait on them.
            assertThat(withContext(waiters) { "served" }).isEqualTo("served")
            assertThat(calls.none { it.isCompleted }).`as`("every waiter still waits").isTrue()
            release.complete(Unit)
            holder.join()
            calls.awaitAll()
            val detector = stock.detectors.getValue("hot")
            assertThat(detector.overlaps()).isZero()
            assertThat(detector.counter()).isEqualTo(50)
        } finally {
            waiters.close()
        }
    }

    @Test
    fun aCoroutineThatResumesOnAnotherThreadKeepsItsLockAndContextAndReleases(): Unit = runBlocking {
        val pool = Executors.newSingleThreadExecutor { task -> Thread(task, "elsewhere") }.asCoroutineDispatcher()
        try {
            val seen = withContext(Dispatchers.Default) { stock.hopThreads("hop", 0L, pool) }
            val (first, second, token, before, during, after, key) = Seen(seen)
            assertThat((second as Thread).name).isEqualTo("elsewhere")
            assertThat(second).isNotSameAs(first)
            assertThat(token as Long).isPositive()
            assertThat(listOf(before, during, after)).containsOnly(token)
            assertThat(key).isEqualTo("stock:hop")
            assertThat(stock.ifFree("hop")).`as`("released after the coroutine ended").isEqualTo("hop")
            // Nothing of the section stays bound to the threads that ran it.
            assertThat(withContext(pool) { LockContext.find().isPresent }).isFalse()
            val next = withContext(Dispatchers.Default) { stock.hopThreads("hop", 0L, pool) }
            assertThat(next[2] as Long).`as`("the next holder's token").isGreaterThan(token)
        } finally {
            pool.close()
        }
    }

    @Test
    fun fencingTokenParameterAndLockContextInTheDocumentedExample(): Unit = runBlocking {
        val shipping = context.getBean(ShippingService::class.java)
        assertThat(shipping.ship("order-1", 0L)).isTrue()
        assertThat(shipping.ship("order-1", 0L)).`as`("a later holder's larger token is accepted").isTrue()
        assertThat(shipping.shipIfFree("order-2")).isEqualTo("shipped order-2")
    }

    @Test
    fun skipAndTheSuspendFallbackWhenTheKeyIsTaken(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val release = CompletableDeferred<Unit>()
        val holder = launch(Dispatchers.Default) { stock.hold("busy", entered, release) }
        entered.await()
        assertThat(stock.ifFree("busy")).`as`("SKIP").isNull()
        otherJvm.acquire("shipment:order-3", java.time.Duration.ofSeconds(1)).use {
            val shipping = context.getBean(ShippingService::class.java)
            assertThat(shipping.shipIfFree("order-3")).`as`("FALLBACK").isEqualTo("queued order-3")
        }
        release.complete(Unit)
        holder.join()
        assertThat(stock.ifFree("busy")).isEqualTo("busy")
    }

    @Test
    fun abortIfEndsTheWaitWithLockNotAcquired(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val release = CompletableDeferred<Unit>()
        val holder = launch(Dispatchers.Default) { stock.hold("abort", entered, release) }
        entered.await()
        val stop = AtomicBoolean()
        val waiting = async(Dispatchers.Default) { runCatching { stock.unlessStopped("abort", stop) } }
        delay(100)
        assertThat(waiting.isCompleted).isFalse()
        val stoppedAt = System.nanoTime()
        stop.set(true)
        val outcome = withTimeout(5_000) { waiting.await() }
        assertThat(outcome.exceptionOrNull()).isInstanceOf(LockNotAcquiredException::class.java)
        println("dlock: abortIf ended the wait ${TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt)} ms after it turned true")
        release.complete(Unit)
        holder.join()
    }

    @Test
    fun aLostLeaseCancelsTheCoroutineAndTheCallerGetsLockLostException(): Unit = runBlocking {
        val started = CompletableDeferred<Unit>()
        val call = async(Dispatchers.Default) { runCatching { stock.runUntilStopped("job-1", started) } }
        started.await()
        val forcedAt = System.nanoTime()
        assertThat(otherJvm.admin().forceRelease("job", "job:job-1")).hasSize(1)
        val outcome = withTimeout(5_000) { call.await() }
        println("dlock: coroutine cancelled ${TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - forcedAt)} ms after the forced release")
        assertThat(outcome.exceptionOrNull()).isInstanceOf(LockLostException::class.java)
        assertThat(stock.cancelled.get()).`as`("the section saw its cancellation").isTrue()
    }

    private suspend fun freeWithin(sku: String, millis: Long): Boolean =
        withTimeoutOrNull(millis) {
            while (stock.ifFree(sku) == null) {
                delay(5)
            }
            true
        } ?: false

    /** Destructures the seven values hopThreads returns. */
    private class Seen(private val values: List<Any>) {
        operator fun component1() = values[0]
        operator fun component2() = values[1]
        operator fun component3() = values[2]
        operator fun component4() = values[3]
        operator fun component5() = values[4]
        operator fun component6() = values[5]
        operator fun component7() = values[6]
    }
}
