package dev.dlock.redis;

import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.dlock.core.AcquireResult;
import dev.dlock.core.LeaseRenewal;
import dev.dlock.core.LockKind;
import dev.dlock.core.ReleaseResult;
import dev.dlock.core.RenewalResult;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.resps.Tuple;

/** The scripts of the lock kinds (permits, read/write, fair) against a real redis-server, call by call. */
class RedisLockKindsTest {

    private static final LockKind THREE = LockKind.permits(3);
    private static final Duration BOUND = Duration.ofSeconds(10);

    private static RedisServerProcess server;
    private static RedisClient client;

    private final RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private RedisLockBackend backend;

    @BeforeAll
    static void startRedis() {
        server = RedisServerProcess.start();
        client = RedisTestSupport.client(server);
    }

    @AfterAll
    static void stopRedis() throws Exception {
        RedisTestSupport.closeAll(client, server);
    }

    @BeforeEach
    void newBackend() {
        try (Jedis admin = server.admin()) {
            admin.flushAll();
        }
        backend = RedisLockBackend.builder(client).build();
    }

    @AfterEach
    void closeBackend() {
        backend.close();
    }

    @Test
    void everyKindIsSupported() {
        assertThat(backend.supportedModes()).containsExactlyInAnyOrder(LockKind.Mode.values());
    }

    @Test
    void permitsAdmitUpToTheLimitAndReportWhenTheEarliestExpires() {
        assertThat(backend.tryAcquire(THREE, "p", "a", 20_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(THREE, "p", "b", 5_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(THREE, "p", "c", 30_000)).isInstanceOf(AcquireResult.Acquired.class);

        assertThat(backend.tryAcquire(THREE, "p", "d", 30_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 5_000L));
        try (Jedis admin = server.admin()) {
            assertThat(admin.zcard(keys.permitsKey("p"))).isEqualTo(3);
            // The set lives as long as its latest member, so an abandoned one disappears.
            assertThat(admin.pttl(keys.permitsKey("p"))).isBetween(20_001L, 30_000L);
        }
        assertThat(backend.release(THREE, "p", "b", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.tryAcquire(THREE, "p", "d", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    void aHolderAskingAgainWhenAllPermitsAreTakenGetsItsPermitWithAFreshToken() {
        long first = token(backend.tryAcquire(THREE, "p", "a", 1_000));
        backend.tryAcquire(THREE, "p", "b", 30_000);
        backend.tryAcquire(THREE, "p", "c", 30_000);

        long retried = token(backend.tryAcquire(THREE, "p", "a", 30_000));

        assertThat(retried).isGreaterThan(first);
        try (Jedis admin = server.admin()) {
            assertThat(admin.zcard(keys.permitsKey("p"))).isEqualTo(3);
            assertThat(admin.zscore(keys.permitsKey("p"), "a") - serverMillis(admin)).isGreaterThan(20_000);
        }
    }

    @Test
    void anExpiredPermitIsPurgedAndItsPlaceTaken() {
        backend.tryAcquire(THREE, "p", "short", 100);
        backend.tryAcquire(THREE, "p", "b", 30_000);
        backend.tryAcquire(THREE, "p", "c", 30_000);

        await("the short permit to expire and free a place", BOUND,
                () -> backend.tryAcquire(THREE, "p", "d", 30_000) instanceof AcquireResult.Acquired);

        try (Jedis admin = server.admin()) {
            assertThat(admin.zrange(keys.permitsKey("p"), 0, -1)).containsExactlyInAnyOrder("b", "c", "d");
        }
        assertThat(backend.renew(List.of(new LeaseRenewal("p", "short", 30_000, THREE)))).containsExactly(RenewalResult.EXPIRED);
        assertThat(backend.release(THREE, "p", "short", 0)).isEqualTo(ReleaseResult.ALREADY_FREE);
    }

    @Test
    void aPermitRenewsWhileHeldAndReleasesOnce() {
        backend.tryAcquire(THREE, "p", "a", 1_000);

        assertThat(backend.renew(List.of(new LeaseRenewal("p", "a", 40_000, THREE)))).containsExactly(RenewalResult.RENEWED);
        try (Jedis admin = server.admin()) {
            assertThat(admin.zscore(keys.permitsKey("p"), "a") - serverMillis(admin)).isGreaterThan(30_000);
            assertThat(admin.pttl(keys.permitsKey("p"))).isGreaterThan(30_000L);
        }
        assertThat(backend.release(THREE, "p", "a", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.release(THREE, "p", "a", 0)).isEqualTo(ReleaseResult.ALREADY_FREE);
        assertThat(backend.renew(List.of(new LeaseRenewal("p", "a", 40_000, THREE)))).containsExactly(RenewalResult.EXPIRED);
    }

    @Test
    void permitsAreASeparateLockFromTheExclusiveOne() {
        assertThat(backend.tryAcquire("k", "x", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(THREE, "k", "p", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(LockKind.permits(1), "k2", "p", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(LockKind.permits(1), "k2", "q", 30_000)).isInstanceOf(AcquireResult.Held.class);
    }

    @Test
    void badArgumentsAreRefusedWithTheirName() {
        assertThatThrownBy(() -> backend.tryAcquire(THREE, "p", "", 1_000)).hasMessageContaining("owner");
        assertThatThrownBy(() -> backend.tryAcquire(THREE, "p", "a", 0)).hasMessageContaining("leaseMillis");
        assertThatThrownBy(() -> RedisLockBackend.builder(client).fairWaiterTimeout(Duration.ofMillis(99)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fairWaiterTimeout")
                .hasMessageContaining("100 ms");
        assertThatThrownBy(() -> RedisLockBackend.builder(client).fairWaiterTimeout(null))
                .hasMessageContaining("fairWaiterTimeout");
    }

    static long token(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }

    static long serverMillis(Jedis admin) {
        List<String> time = admin.time();
        return Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    }

    static double latestScore(Jedis admin, String zset) {
        List<Tuple> latest = admin.zrangeWithScores(zset, -1, -1);
        return latest.isEmpty() ? 0 : latest.get(0).getScore();
    }
}
