package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.LockBackendException;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.args.ClientPauseMode;
import redis.clients.jedis.exceptions.JedisConnectionException;

/** The backend when Redis crashes or restarts: fails fast with LockBackendException, recovers after restart. */
class RedisFailureTest {

    private static final Duration BOUND = Duration.ofSeconds(5);

    @Test
    void killedRedisMakesEveryOperationFailWithLockBackendExceptionWithinTheClientTimeout() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start();
             RedisClient client = RedisTestSupport.client(server);
             RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            backend.tryAcquire(LockKind.EXCLUSIVE, "warm", "a", 10_000);
            server.kill();

            CompletableFuture<Throwable> failure = CompletableFuture.supplyAsync(() -> {
                try {
                    backend.tryAcquire(LockKind.EXCLUSIVE, "order-1", "a", 10_000);
                    return null;
                } catch (Throwable e) {
                    return e;
                }
            });
            Throwable thrown = failure.get(BOUND.toMillis(), TimeUnit.MILLISECONDS);

            assertThat(thrown).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("tryAcquire")
                    .hasMessageContaining("order-1")
                    .hasMessageContaining(JedisConnectionException.class.getName())
                    .hasNoCause()
                    .satisfies(e -> assertThat(e.getSuppressed()).as("the client's exception, kept for the stack trace")
                            .singleElement().isInstanceOf(JedisConnectionException.class));
            assertThatThrownBy(() -> backend.release(LockKind.EXCLUSIVE, "order-1", "a", 0))
                    .isInstanceOf(LockBackendException.class).hasMessageContaining("release");
            assertThatThrownBy(() -> backend.renew(List.of(new LeaseRenewal("order-1", "a", 1_000))))
                    .isInstanceOf(LockBackendException.class).hasMessageContaining("renew");
            assertThatThrownBy(backend::ping).isInstanceOf(LockBackendException.class);
        }
    }

    @Test
    void unresponsiveRedisTimesOutInsteadOfHanging() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start();
             RedisClient client = RedisTestSupport.client(server);
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             Jedis admin = server.admin()) {
            backend.tryAcquire(LockKind.EXCLUSIVE, "warm", "a", 10_000);
            // The server stops answering writes until the test ends it, far longer than the 500 ms client timeout
            // (a pause of a fixed 2 s could end before a slow machine sent the call); a failed assertion ends it too.
            admin.clientPause(60_000, ClientPauseMode.WRITE);
            try {
                long start = System.nanoTime();
                assertThatThrownBy(() -> backend.tryAcquire(LockKind.EXCLUSIVE, "paused", "a", 10_000))
                        .isInstanceOf(LockBackendException.class)
                        .hasMessageContaining("paused");
                assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(BOUND);
            } finally {
                admin.clientUnpause();
            }
        }
    }

    @Test
    void operationsWorkAgainAfterRestartWithTheScriptCacheGone() {
        try (RedisServerProcess server = RedisServerProcess.start();
             RedisClient client = RedisTestSupport.client(server);
             RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            backend.tryAcquire(LockKind.EXCLUSIVE, "before", "a", 10_000);
            server.kill();
            server.restart();

            // The first calls may hit pooled connections that died with the old process.
            AcquireResult result = RedisTestSupport.retrying(BOUND, () -> backend.tryAcquire(LockKind.EXCLUSIVE, "after", "a", 10_000));

            assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "before", "b", 10_000)).isInstanceOf(AcquireResult.Acquired.class);
        }
    }
}
