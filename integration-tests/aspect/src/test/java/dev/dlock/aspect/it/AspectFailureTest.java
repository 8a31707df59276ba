package dev.dlock.aspect.it;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.aspect.EnableDistributedLocks;
import dev.dlock.aspect.LockContext;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Mono;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a locked method's caller sees when the store fails under it; a Redis of its own, because it is killed. */
class AspectFailureTest {

    private static RedisServerProcess redis;
    private AnnotationConfigApplicationContext context;
    private Work work;
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

        /** Kills Redis, then fails itself. */
        @DistributedLock(key = "#id")
        public String crashTheStoreAndFail(String id) {
            redis.kill();
            throw new IllegalStateException("the method's own failure");
        }

        /** Kills Redis while the returned future's work runs. */
        @DistributedLock(key = "#id")
        public CompletableFuture<String> crashTheStoreAsync(String id, CompletableFuture<String> work) {
            return work.thenApply(value -> {
                redis.kill();
                return value;
            });
        }

        /** Kills Redis while the returned Mono is subscribed. */
        @DistributedLock(key = "#id")
        public Mono<String> crashTheStoreMono(String id) {
            return Mono.fromCallable(() -> {
                redis.kill();
                return "done";
            });
        }

        /** Kills Redis while the returned Mono is subscribed, then fails it. */
        @DistributedLock(key = "#id")
        public Mono<String> crashTheStoreAndFailMono(String id) {
            return Mono.fromCallable(() -> {
                redis.kill();
                throw new IllegalStateException("the Mono's own failure");
            });
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
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    /** A context per test: a test that killed Redis leaves dead connections in its client's pool. */
    @BeforeEach
    void startContext() {
        if (!redis.isRunning()) {
            redis.restart();
        }
        context = new AnnotationConfigApplicationContext(Config.class);
        work = context.getBean(Work.class);
    }

    @AfterEach
    void stopContext() {
        context.close();
    }

    @Test
    void aLeaseLostDuringTheMethodIsVisibleInsideAndThrownAtTheEnd() {
        assertThatThrownBy(() -> work.loseTheLease(UUID.randomUUID().toString()))
                .isInstanceOf(LockLostException.class)
                .hasMessageContaining("Work.loseTheLease");
        assertThat(heldAtTheEndOfTheMethod).as("the method saw the loss through LockContext").isFalse();
    }

    @Test
    void aStoreThatDiesBeforeTheReleaseFailsTheCallNamingTheKey() {
        String id = UUID.randomUUID().toString();
        assertThatThrownBy(() -> work.crashTheStore(id))
                .as("the release could not be confirmed: the caller must not take the work as done under the lock")
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("Work.crashTheStore:" + id);
        assertThat(context.getBean(LockManager.class).admin().heldLocks()).isEmpty();
    }

    @Test
    void aMethodFailureStaysTheCallersExceptionWithTheReleaseFailureSuppressed() {
        String id = UUID.randomUUID().toString();
        assertThatThrownBy(() -> work.crashTheStoreAndFail(id))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the method's own failure")
                .satisfies(failure -> assertThat(failure.getSuppressed())
                        .hasSize(1)
                        .allSatisfy(suppressed -> assertThat(suppressed).isInstanceOf(LockBackendException.class)
                                .hasMessageContaining("Work.crashTheStoreAndFail:" + id)));
    }

    @Test
    void aFailedMonoKeepsItsErrorWithTheReleaseFailureSuppressed() {
        String id = UUID.randomUUID().toString();
        assertThatThrownBy(() -> work.crashTheStoreAndFailMono(id).block(Duration.ofSeconds(10)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the Mono's own failure")
                .satisfies(failure -> assertThat(failure.getSuppressed())
                        .anySatisfy(suppressed -> assertThat(suppressed).isInstanceOf(LockBackendException.class)
                                .hasMessageContaining("Work.crashTheStoreAndFailMono:" + id)));
    }

    @Test
    void aStoreThatDiesBeforeAnAsyncReleaseFailsTheFuture() {
        String id = UUID.randomUUID().toString();
        CompletableFuture<String> pending = new CompletableFuture<>();
        CompletableFuture<String> result = work.crashTheStoreAsync(id, pending);
        pending.complete("done");
        assertThatThrownBy(() -> result.get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockBackendException.class)
                .hasMessageContaining("Work.crashTheStoreAsync:" + id);
    }

    @Test
    void aStoreThatDiesBeforeAMonoReleaseFailsTheMono() {
        String id = UUID.randomUUID().toString();
        assertThatThrownBy(() -> work.crashTheStoreMono(id).block(Duration.ofSeconds(10)))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("Work.crashTheStoreMono:" + id);
    }
}
