package dev.dlock.aspect.it;

import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.SharedRedis;
import dev.dlock.aspect.EnableDistributedLocks;
import dev.dlock.core.LockManager;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.EnableAspectJAutoProxy;
import org.springframework.core.env.MapPropertySource;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.Map;
import java.util.function.Consumer;

/** Spring contexts over the shared real Redis, for the tests that need Redis itself (the aspect's own tests run in aspect-runtime on the in-memory store). */
final class TestContexts {

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

    /** The aspect with its default order. */
    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks
    static class DefaultLocking {
    }

    /** The lock manager and its Redis client. */
    @Configuration(proxyBeanMethods = false)
    @EnableAspectJAutoProxy(proxyTargetClass = true)
    static class LockInfrastructure {

        @Bean
        UnifiedJedis redisClient() {
            return SharedRedis.client();
        }

        @Bean
        LockManager lockManager(UnifiedJedis redisClient) {
            return LockManager.builder(RedisLockBackend.builder(redisClient).build())
                    .leaseTime(Duration.ofSeconds(3))
                    .build();
        }
    }
}
