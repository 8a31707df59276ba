package dev.dlock.redis;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Closing a lock manager frees its keys in a real Redis: another instance takes them at once, not after the lease. */
class RedisShutdownTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static RedisServerProcess redis;
    private static RedisClient closingClient;
    private static RedisClient otherClient;

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
        closingClient = RedisClient.create(redis.host(), redis.port());
        otherClient = RedisClient.create(redis.host(), redis.port());
    }

    @AfterAll
    static void stopRedis() {
        for (AutoCloseable closeable : new AutoCloseable[] {closingClient, otherClient, redis}) {
            try {
                if (closeable != null) {
                    closeable.close();
                }
            } catch (Exception e) {
                // the next one is still closed
            }
        }
    }

    @Test
    void aLeaseHeldAtCloseIsReleasedInRedisAndAnotherInstanceTakesTheKeyAtOnce() throws Exception {
        String key = "shutdown:" + UUID.randomUUID();
        try (RedisLockBackend closingStore = RedisLockBackend.builder(closingClient).build();
             RedisLockBackend otherStore = RedisLockBackend.builder(otherClient).build();
             LockManager other = LockManager.builder(otherStore).instanceId("other").build();
             Jedis admin = redis.admin()) {
            LockManager closing = LockManager.builder(closingStore).instanceId("closing")
                    .shutdownGracePeriod(Duration.ofMillis(200)).build();
            LockHandle held = heldByAnotherThread(closing, LockRequest.builder(key).waitTime(Duration.ZERO).build());
            assertThat(admin.pttl(KEYS.lockKey(key))).as("the lease in Redis before close").isGreaterThan(20_000);

            closing.close();

            assertThat(admin.exists(KEYS.lockKey(key))).as("the lock key in Redis after close()").isFalse();
            Optional<LockHandle> next = other.tryAcquire(key);
            assertThat(next).as("another instance, right after close() (the lease had %s s left)", 30).isPresent();
            next.get().close();
            assertThat(held.state()).isEqualTo(LockState.LOST);
            assertThatThrownBy(held::close).isInstanceOf(LockLostException.class).hasMessageContaining(key)
                    .hasMessageContaining("lock manager was closed");
        }
    }

    @Test
    void aLeaseWithLockAtLeastForIsShortenedToItsMinimumAtClose() throws Exception {
        String key = "shutdown-min:" + UUID.randomUUID();
        try (RedisLockBackend closingStore = RedisLockBackend.builder(closingClient).build();
             Jedis admin = redis.admin()) {
            LockManager closing = LockManager.builder(closingStore).shutdownGracePeriod(Duration.ZERO).build();
            heldByAnotherThread(closing, LockRequest.builder(key).waitTime(Duration.ZERO)
                    .lockAtLeastFor(Duration.ofSeconds(20)).build());
            assertThat(admin.pttl(KEYS.lockKey(key))).as("the 30 s watchdog lease before close").isGreaterThan(20_000);

            closing.close();

            assertThat(admin.pttl(KEYS.lockKey(key))).as("ms the key stays taken in Redis after close(): what is left of lockAtLeastFor")
                    .isBetween(10_000L, 20_000L);
        }
    }

    /**
     * A store that stopped answering does not hold {@code close()} for a release timeout per lock: the sweep after the grace period
     * sends releases for 5 s, and the leases still held then are reported lost and left to expire. Before, each of the
     * 12 leases cost a full release retry (a 1 s socket timeout, then the 2 s retry budget): 24 s here, against 6 s.
     */
    @Test
    void aStoreThatStoppedAnsweringDoesNotHoldCloseForATimeoutPerLock() throws Exception {
        try (RedisServerProcess frozen = RedisServerProcess.start();
             RedisClient client = RedisClient.builder().hostAndPort(new HostAndPort(frozen.host(), frozen.port()))
                     .clientConfig(DefaultJedisClientConfig.builder().socketTimeoutMillis(1_000).connectionTimeoutMillis(1_000).build())
                     .build();
             RedisLockBackend store = RedisLockBackend.builder(client).build()) {
            LockManager closing = LockManager.builder(store).shutdownGracePeriod(Duration.ZERO).build();
            List<LockHandle> held = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                held.add(heldByAnotherThread(closing, LockRequest.builder("frozen-" + i + ":" + UUID.randomUUID())
                        .waitTime(Duration.ZERO).build()));
            }
            long closedAfterMillis;
            try (RedisServerProcess.Stall stall = frozen.stall()) {
                long start = System.nanoTime();
                closing.close();
                closedAfterMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            }
            // The sweep's 5 s, plus the one release under way when they ran out (its 2 s budget and a 1 s timeout).
            assertThat(closedAfterMillis).as("ms close() took with the store frozen and 12 locks held").isLessThan(14_000);
            for (LockHandle lock : held) {
                assertThat(lock.state()).as("%s after close()", lock).isEqualTo(LockState.LOST);
                assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class).hasMessageContaining("lock manager was closed");
            }
        }
    }

    /** Takes {@code request} on a thread that then ends: a hold the closing thread does not own. */
    private static LockHandle heldByAnotherThread(LockManager locks, LockRequest request) throws Exception {
        CompletableFuture<LockHandle> taken = new CompletableFuture<>();
        Thread holder = new Thread(() -> {
            try {
                taken.complete(locks.acquire(request));
            } catch (RuntimeException e) {
                taken.completeExceptionally(e);
            }
        }, "holder");
        holder.start();
        holder.join(10_000);
        return taken.get(10, TimeUnit.SECONDS);
    }
}
