package dev.dlock.boot.inmemory;

import dev.dlock.boot.actuate.LockStoreHealthIndicator;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Boot application with the starter and {@code dlock.store=in-memory} runs its
 * {@code @DistributedLock} methods with no Redis anywhere: neither the Redis store nor a Redis
 * client is on this module's class path, and the Redis addresses set are ones where nothing listens.
 */
@SpringBootTest(classes = CounterApplication.class, properties = {
        "dlock.store=in-memory",
        "dlock.redis.url=redis://127.0.0.1:1",
        "spring.data.redis.url=redis://127.0.0.1:1"})
class InMemoryStoreApplicationTest {

    @Autowired
    private CounterApplication.Counter counter;

    @Autowired
    private ApplicationContext context;

    @Test
    void annotatedMethodsLockInMemoryWithoutRedis() throws Exception {
        assertThat(context.getBean(LockBackend.class)).isInstanceOf(InMemoryLockBackend.class);
        for (String redisClass : List.of("dev.dlock.redis.RedisLockBackend", "redis.clients.jedis.UnifiedJedis")) {
            assertThatThrownBy(() -> Class.forName(redisClass)).as(redisClass + " on the class path")
                    .isInstanceOf(ClassNotFoundException.class);
        }

        ExecutorService threads = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 800; i++) {
                calls.add(threads.submit(() -> counter.increment("hot")));
            }
            for (Future<?> call : calls) {
                call.get();
            }
        } finally {
            threads.shutdown();
        }
        assertThat(counter.detector().overlaps()).as("critical sections that overlapped").isZero();
        assertThat(counter.detector().counter()).isEqualTo(800);
        assertThat(context.getBean(LockStoreHealthIndicator.class).health().getStatus()).isEqualTo(Status.UP);
    }
}
