package dev.dlock.kotlin

import dev.dlock.annotation.DistributedLock
import dev.dlock.aspect.EnableDistributedLocks
import dev.dlock.aspect.LockAnnotationException
import dev.dlock.core.inmemory.InMemoryLockBackend
import dev.dlock.core.LockManager
import dev.dlock.testkit.OverlapDetector
import org.assertj.core.api.Assertions.assertThat
import org.assertj.core.api.Assertions.assertThatThrownBy
import org.junit.jupiter.api.Test
import org.springframework.context.annotation.AnnotationConfigApplicationContext
import org.springframework.context.annotation.Bean
import org.springframework.context.annotation.Configuration
import org.springframework.context.annotation.EnableAspectJAutoProxy
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit

/** A Kotlin bean whose plain functions lock like Java methods. */
open class Counter {
    // open: the bean is a CGLIB proxy, and a final getter would read the proxy's own empty field.
    open val detector = OverlapDetector()

    @DistributedLock(name = "counter", key = "#key", waitTime = "10s")
    open fun increment(key: String) {
        detector.enter()
        try {
            detector.incrementUnsafely()
        } finally {
            detector.exit()
        }
    }
}

/** A Kotlin bean whose locked function is not `open`: Kotlin makes it final, so a Spring proxy cannot lock it. */
open class Reports {
    @DistributedLock(name = "reports", key = "#id")
    fun export(id: String): String = id
}

/** A Kotlin bean that is not `open` at all: a final class, which Spring cannot subclass for its proxy. */
class Ledger {
    @DistributedLock(name = "ledger", key = "#id")
    fun post(id: String): String = id
}

@Configuration(proxyBeanMethods = false)
@EnableDistributedLocks
@EnableAspectJAutoProxy(proxyTargetClass = true)
open class Locking {
    @Bean(destroyMethod = "close")
    open fun lockManager(): LockManager = LockManager.builder(InMemoryLockBackend()).build()
}

@Configuration(proxyBeanMethods = false)
open class Counting {
    @Bean
    open fun counter() = Counter()
}

@Configuration(proxyBeanMethods = false)
open class Reporting {
    @Bean
    open fun reports() = Reports()
}

@Configuration(proxyBeanMethods = false)
open class Posting {
    @Bean
    open fun ledger() = Ledger()
}

/**
 * {@code @DistributedLock} on Kotlin beans compiled by the Kotlin compiler: a plain function locks
 * (overlap detector at zero under 8 threads), and a function Spring cannot proxy fails the start
 * naming it. Suspend functions: SuspendFunctionsTest.
 */
class KotlinBeansTest {

    @Test
    fun plainKotlinFunctionsLock() {
        AnnotationConfigApplicationContext(Locking::class.java, Counting::class.java).use { context ->
            val counter = context.getBean(Counter::class.java)
            val threads = Executors.newFixedThreadPool(8)
            try {
                val calls = (1..800).map { threads.submit { counter.increment("hot") } }
                calls.forEach { it.get(30, TimeUnit.SECONDS) }
            } finally {
                threads.shutdown()
            }
            assertThat(counter.detector.overlaps()).`as`("critical sections that overlapped").isZero()
            assertThat(counter.detector.counter()).isEqualTo(800)
        }
    }

    /** The function is final (not `open`): the start fails naming it, with the Kotlin way out. */
    @Test
    fun aLockedFunctionThatIsNotOpenFailsTheStartWithTheKotlinHint() {
        assertThatThrownBy { AnnotationConfigApplicationContext(Locking::class.java, Reporting::class.java).close() }
            .isInstanceOf(LockAnnotationException::class.java)
            .hasMessageContaining("Reports.export(String)")
            .hasMessageContaining("it is final")
            .hasMessageContaining("declare it `open` or apply the kotlin-spring plugin")
    }

    /** The class is final too: Spring's proxy creation refuses it first, naming the class. */
    @Test
    fun aFinalKotlinClassFailsTheStartInSpringsProxyCreation() {
        assertThatThrownBy { AnnotationConfigApplicationContext(Locking::class.java, Posting::class.java).close() }
            .hasStackTraceContaining("Ledger")
            .hasStackTraceContaining("final class")
    }
}
