package dev.dlock.aspect;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.EnableAspectJAutoProxy;
import org.springframework.core.env.MapPropertySource;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;

/** Spring contexts over one in-memory store shared by the test JVM, so tests need no server. */
final class TestContexts {

    /** The store every context and every {@link #otherJvm()} locks in; tests keep apart by unique keys. */
    static final InMemoryLockBackend STORE = new InMemoryLockBackend();

    private TestContexts() {
    }

    /** Starts a context from {@code configs} plus {@link LockInfrastructure}, with the test properties. */
    static AnnotationConfigApplicationContext start(Class<?>... configs) {
        return start(context -> context.register(DefaultLocking.class), configs);
    }

    /** Starts a context from {@code configs} plus {@link LockInfrastructure}, after {@code customizer} ran. */
    static AnnotationConfigApplicationContext start(Consumer<AnnotationConfigApplicationContext> customizer, Class<?>... configs) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        customizer.accept(context);
        context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("test",
                Map.of("test.wait-time", "250ms", "dlock.abort-check-interval", "100ms")));
        context.register(LockInfrastructure.class);
        if (configs.length > 0) {
            context.register(configs);
        }
        context.refresh();
        return context;
    }

    /** A lock manager of its own over the same store: "another JVM" for holding keys against the one under test. */
    static LockManager otherJvm() {
        return LockManager.builder(STORE).leaseTime(Duration.ofSeconds(5)).watchdogThreadName("other-jvm-watchdog").build();
    }

    /** Counts acquisition attempts per lock name, so tests can wait until every caller is queued. */
    static final class AttemptCounter implements LockListener {
        private final Map<String, CountDownLatch> latches = new ConcurrentHashMap<>();
        private final Set<String> ignored = ConcurrentHashMap.newKeySet();

        CountDownLatch expect(String lockName, int attempts) {
            CountDownLatch latch = new CountDownLatch(attempts);
            latches.put(lockName, latch);
            return latch;
        }

        @Override
        public void onAcquireAttempt(String lockName, String key) {
            CountDownLatch latch = latches.get(lockName);
            if (latch != null) {
                latch.countDown();
            } else {
                ignored.add(lockName);
            }
        }
    }

    /** The aspect with its default order. */
    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks
    static class DefaultLocking {
    }

    /** The lock manager over the shared store, and the listener. */
    @Configuration(proxyBeanMethods = false)
    @EnableAspectJAutoProxy(proxyTargetClass = true)
    static class LockInfrastructure {

        @Bean
        AttemptCounter attemptCounter() {
            return new AttemptCounter();
        }

        @Bean
        LockManager lockManager(AttemptCounter attemptCounter) {
            return LockManager.builder(STORE)
                    .leaseTime(Duration.ofSeconds(3))
                    .listener(attemptCounter)
                    .build();
        }
    }
}
