package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.resilience.annotation.ConcurrencyLimit;
import org.springframework.resilience.annotation.EnableResilientMethods;
import org.springframework.resilience.annotation.Retryable;

import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Spring Framework 7's resilience annotations beside {@code @DistributedLock}: {@code @Retryable} wraps the lock (each
 * retry takes the lock anew, with a new fencing token, so a failed attempt never keeps the key through the back-off),
 * and {@code @ConcurrencyLimit} counts this JVM only, where {@code permits} counts the fleet.
 */
class ResilienceAnnotationsTest {

    /** Fails its first two calls; records the fencing token each attempt held. */
    static class Flaky {
        private final AtomicInteger calls = new AtomicInteger();
        private final List<Long> tokens = new CopyOnWriteArrayList<>();

        @Retryable(maxRetries = 2, delay = 0)
        @DistributedLock(name = "flaky", key = "#id")
        public String ship(String id) {
            tokens.add(LockContext.current().fencingToken());
            if (calls.incrementAndGet() < 3) {
                throw new IllegalStateException("attempt " + calls.get() + " failed");
            }
            return "shipped";
        }

        public List<Long> tokens() {
            return tokens;
        }
    }

    /** At most one caller at a time, counted in this JVM. */
    static class Limited {
        @ConcurrencyLimit(1)
        public void enter(CountDownLatch inside, CountDownLatch leave) throws InterruptedException {
            inside.countDown();
            leave.await(10, TimeUnit.SECONDS);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableResilientMethods
    static class Services {
        @Bean
        Flaky flaky() {
            return new Flaky();
        }

        @Bean
        Limited limited() {
            return new Limited();
        }
    }

    private static AnnotationConfigApplicationContext jvmA;
    private static AnnotationConfigApplicationContext jvmB;

    @BeforeAll
    static void start() {
        jvmA = TestContexts.start(Services.class);
        jvmB = TestContexts.start(Services.class);
    }

    @AfterAll
    static void stop() {
        jvmA.close();
        jvmB.close();
    }

    @Test
    void aRetryTakesTheLockAnewForEachAttempt() {
        Flaky flaky = jvmA.getBean(Flaky.class);

        assertThat(flaky.ship(UUID.randomUUID().toString())).isEqualTo("shipped");

        assertThat(flaky.tokens()).as("one lock per attempt, each with a larger token").hasSize(3).isSorted().doesNotHaveDuplicates();
    }

    /** Two JVMs (two contexts) each admit a caller to a {@code @ConcurrencyLimit(1)} method at once: the limit is per JVM. */
    @Test
    void aConcurrencyLimitCountsOneJvmOnly() throws Exception {
        CountDownLatch inside = new CountDownLatch(2);
        CountDownLatch leave = new CountDownLatch(1);
        Thread a = new Thread(() -> enter(jvmA.getBean(Limited.class), inside, leave));
        Thread b = new Thread(() -> enter(jvmB.getBean(Limited.class), inside, leave));
        a.start();
        b.start();
        try {
            assertThat(inside.await(10, TimeUnit.SECONDS)).as("a caller of each JVM inside at once").isTrue();
        } finally {
            leave.countDown();
            a.join(10_000);
            b.join(10_000);
        }
    }

    private static void enter(Limited limited, CountDownLatch inside, CountDownLatch leave) {
        try {
            limited.enter(inside, leave);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
