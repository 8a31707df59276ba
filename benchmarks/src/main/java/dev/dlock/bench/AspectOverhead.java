package dev.dlock.bench;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.aspect.EnableDistributedLocks;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.List;

/**
 * The per-call cost of {@code @DistributedLock} (Spring AOP proxy, cached metadata, SpEL key)
 * against the programmatic API taking the same lock on the same Redis.
 */
final class AspectOverhead {

    private AspectOverhead() {
    }

    /** A bean whose method is locked by the annotation, with the key from SpEL. */
    public static class Orders {
        /** Locks {@code Orders.ship:<orderId>} for the call. */
        @DistributedLock(key = "#orderId", waitTime = "0")
        public long ship(String orderId) {
            return orderId.length();
        }
    }

    /** A Spring context with the aspect switched on, over one lock manager. */
    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks
    static class Context {
        @Bean(destroyMethod = "close")
        UnifiedJedis redis() {
            return BenchRedis.client();
        }

        @Bean(destroyMethod = "close")
        RedisLockBackend backend(UnifiedJedis redis) {
            return RedisLockBackend.builder(redis).build();
        }

        @Bean(destroyMethod = "close")
        LockManager lockManager(RedisLockBackend backend) {
            return LockManager.builder(backend).build();
        }

        @Bean
        Orders orders() {
            return new Orders();
        }
    }

    static InterleavedThroughput.Result measure(int threads, int rounds, long roundMillis) throws InterruptedException {
        try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext(Context.class)) {
            LockManager locks = context.getBean(LockManager.class);
            Orders orders = context.getBean(Orders.class);
            return InterleavedThroughput.measure(List.of(
                    new InterleavedThroughput.Variant("programmatic", key -> {
                        try (LockHandle lock = locks.acquire("Orders.ship:" + key, Duration.ZERO)) {
                            return key.length();
                        }
                    }),
                    new InterleavedThroughput.Variant("annotation", orders::ship)), threads, rounds, roundMillis);
        }
    }
}
