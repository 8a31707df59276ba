package dev.dlock.aspect.it;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.aspect.EnableDistributedLocks;
import dev.dlock.aspect.LockContext;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a locked method's caller sees when the store fails under it; a Redis of its own, because it is killed. */
class AspectFailureTest {

    private static RedisServerProcess redis;
    private static AnnotationConfigApplicationContext context;
    private static Work work;
    private static volatile Boolean heldAtTheEndOfTheMethod;

    /** Methods that let the test break the store in the middle of the critical section. */
    public static class Work {
        /** Deletes its own lock key, then waits until the watchdog has reported the loss. */
        @DistributedLock(key = "#id")
        public String loseTheLease(String id) throws InterruptedException {
            try (Jedis admin = redis.admin()) {
                admin.del(RedisLockBackend.DEFAULT_KEY_PREFIX + "{Work.loseTheLease:" + id + "}");
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (LockContext.current().isHeld() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            heldAtTheEndOfTheMethod = LockContext.current().isHeld();
            return "finished";
        }

        /** Kills Redis, so that the release after the method cannot reach it. */
        @DistributedLock(key = "#id")
        public String crashTheStore(String id) {
            redis.kill();
            return "done";
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks
    static class Config {
        @Bean(destroyMethod = "close")
        UnifiedJedis redisClient() {
            return RedisClient.builder().hostAndPort(new HostAndPort(redis.host(), redis.port()))
                    .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(1000).build()).build();
        }

        @Bean(destroyMethod = "close")
        LockManager lockManager(UnifiedJedis redisClient) {
            return LockManager.builder(RedisLockBackend.builder(redisClient).build()).leaseTime(Duration.ofSeconds(1)).build();
        }

        @Bean
        Work work() {
            return new Work();
        }
    }

    @BeforeAll
    static void start() {
        redis = RedisServerProcess.start();
        context = new AnnotationConfigApplicationContext(Config.class);
        work = context.getBean(Work.class);
    }

    @AfterAll
    static void stop() {
        context.close();
        redis.close();
    }

    @Test
    void aLeaseLostDuringTheMethodIsVisibleInsideAndThrownAtTheEnd() {
        assertThatThrownBy(() -> work.loseTheLease(UUID.randomUUID().toString()))
                .isInstanceOf(LockLostException.class)
                .hasMessageContaining("Work.loseTheLease");
        assertThat(heldAtTheEndOfTheMethod).as("the method saw the loss through LockContext").isFalse();
    }

    @Test
    void aStoreThatDiesBeforeTheReleaseDoesNotFailTheFinishedWork() {
        try {
            assertThat(work.crashTheStore(UUID.randomUUID().toString())).isEqualTo("done");
        } finally {
            redis.restart();
        }
        assertThat(context.getBean(LockManager.class).heldLocks()).isEmpty();
    }
}
