package dev.dlock.kotlin

import dev.dlock.core.LockLostException
import dev.dlock.core.LockManager
import dev.dlock.core.LockRequest
import dev.dlock.redis.RedisLockBackend
import dev.dlock.testkit.OverlapDetector
import dev.dlock.testkit.redis.RedisServerProcess
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withContext
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import redis.clients.jedis.JedisPooled
import java.time.Duration

/**
 * [withLockSuspending] on a real Redis, two managers with clients of their own standing for two JVMs: suspending
 * sections of both never overlap, and another JVM's forced release cancels a section that stops on lease lost.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisCoroutinesTest {

    private lateinit var redis: RedisServerProcess
    private lateinit var clients: List<JedisPooled>
    private lateinit var jvmA: LockManager
    private lateinit var jvmB: LockManager

    @BeforeAll
    fun start() {
        redis = RedisServerProcess.start()
        clients = List(2) { JedisPooled(redis.host(), redis.port()) }
        // A 3 s lease: where the store does not tell the holder of a forced release at once, its next renewal (1 s) does.
        jvmA = LockManager.builder(RedisLockBackend.builder(clients[0]).build()).leaseTime(Duration.ofSeconds(3)).build()
        jvmB = LockManager.builder(RedisLockBackend.builder(clients[1]).build()).build()
    }

    @AfterAll
    fun stop() {
        runCatching { jvmA.close() }
        runCatching { jvmB.close() }
        clients.forEach { runCatching { it.close() } }
        redis.close()
    }

    @Test
    fun suspendingSectionsOfTwoJvmsNeverOverlap(): Unit = runBlocking {
        val detectors = (0 until 5).map { OverlapDetector() }
        withContext(Dispatchers.Default) {
            (0 until 200).map { i ->
                async {
                    val locks = if (i % 2 == 0) jvmA else jvmB
                    locks.withLockSuspending("redis-coroutines:${i % 5}", Duration.ofSeconds(60)) {
                        val detector = detectors[i % 5]
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
        detectors.forEach {
            assertThat(it.overlaps()).isZero()
            assertThat(it.counter()).isEqualTo(40)
        }
    }

    @Test
    fun anotherJvmsForcedReleaseCancelsASectionThatStopsOnLeaseLost(): Unit = runBlocking {
        val entered = CompletableDeferred<Unit>()
        val request = LockRequest.builder("redis-coroutines:stopped").stopWorkOnLeaseLost(true).build()
        val outcome = async(Dispatchers.Default) {
            runCatching {
                jvmA.withLockSuspending(request) {
                    entered.complete(Unit)
                    delay(60_000)
                }
            }.exceptionOrNull()
        }
        entered.await()

        assertThat(jvmB.admin().forceRelease("redis-coroutines:stopped")).hasSize(1)

        assertThat(outcome.await()).isInstanceOf(LockLostException::class.java)
        jvmB.tryAcquire("redis-coroutines:stopped").orElseThrow().close()
    }
}
