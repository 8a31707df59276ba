package dev.dlock.boot.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.LockMode;
import dev.dlock.aspect.LockContext;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.MemcachedLockStoreAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.memcached.MemcachedLockBackend;
import dev.dlock.memcached.MemcachedServerExtension;
import dev.dlock.testkit.Concurrently;
import dev.dlock.testkit.OverlapDetector;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@code dlock.store=memcached} in a Boot 4 application, on a memcached this test starts: annotated methods lock
 * in memcached under the configured prefix (an overlap detector under 8 threads), the startup line says the store
 * is efficiency only, a fencing token asked for inside the method is refused, a read lock is refused at startup
 * naming the method, and a start without servers fails naming the property. No Redis is configured or contacted.
 */
@ExtendWith(OutputCaptureExtension.class)
class MemcachedStoreApplicationTest {

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();

    /** Counts under a lock, with an overlap detector inside. */
    public static class Counter {
        private final OverlapDetector detector = new OverlapDetector();

        public OverlapDetector detector() {
            return detector;
        }

        @DistributedLock(name = "counter", key = "#key", waitTime = "20s")
        public void increment(String key) {
            detector.enter();
            try {
                detector.incrementUnsafely();
            } finally {
                detector.exit();
            }
        }

        @DistributedLock(name = "fenced", key = "#key")
        public long fencingToken(String key) {
            return LockContext.current().fencingToken();
        }
    }

    /** A method asking for a read lock, which memcached cannot take. */
    public static class Reports {
        @DistributedLock(name = "report", key = "#id", mode = LockMode.READ)
        public void read(String id) {
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class CounterApplication {
        @Bean
        Counter counter() {
            return new Counter();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class ReportApplication {
        @Bean
        Reports reports() {
            return new Reports();
        }
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, RedisLockStoreAutoConfiguration.class,
                    MemcachedLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class))
            .withPropertyValues("dlock.store=memcached", "dlock.redis.url=redis://127.0.0.1:1");

    @Test
    void annotatedMethodsLockInMemcachedUnderThePrefix() {
        runner.withUserConfiguration(CounterApplication.class)
                .withPropertyValues("dlock.memcached.servers=" + memcached.server().address(), "dlock.memcached.key-prefix=shop:")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(LockBackend.class)).isInstanceOf(MemcachedLockBackend.class);
                    assertThat(context).doesNotHaveBean(UnifiedJedis.class);
                    Counter counter = context.getBean(Counter.class);
                    Concurrently.run(8, 25, Duration.ofSeconds(60), () -> counter.increment("hot"));
                    assertThat(counter.detector().overlaps()).as("critical sections that overlapped").isZero();
                    assertThat(counter.detector().counter()).isEqualTo(200);
                    assertThat(memcached.server().holdsLockItem("shop:", "counter:hot")).as("the lock item after the calls").isFalse();
                });
    }

    @Test
    void theStartupLineSaysEfficiencyOnlyAndAFencingTokenIsRefused(CapturedOutput output) {
        runner.withUserConfiguration(CounterApplication.class)
                .withPropertyValues("dlock.memcached.servers=" + memcached.server().address())
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(output.getAll()).contains("dlock locks in memcached [" + memcached.server().address()
                            + "]: efficiency only, never for correctness");
                    Throwable refused = catchThrowable(() -> context.getBean(Counter.class).fencingToken("order-7"));
                    assertThat(refused).isInstanceOf(UnsupportedOperationException.class)
                            .hasMessageContaining("MemcachedLockBackend issues no fencing tokens");
                });
    }

    @Test
    void aReadLockIsRefusedAtStartupNamingTheMethodAndTheStore() {
        runner.withUserConfiguration(ReportApplication.class)
                .withPropertyValues("dlock.memcached.servers=" + memcached.server().address())
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(rootCause(context.getStartupFailure())).hasMessageContaining("Reports.read")
                            .hasMessageContaining("MemcachedLockBackend cannot take READ locks");
                });
    }

    @Test
    void withoutServersTheStartFailsNamingTheProperty() {
        runner.withUserConfiguration(CounterApplication.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(rootCause(context.getStartupFailure())).hasMessageContaining("dlock.memcached.servers is not set");
        });
    }

    private static Throwable rootCause(Throwable failure) {
        Throwable root = failure;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return root;
    }
}
