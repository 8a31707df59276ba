package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.ReleaseNotices.Subscription;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/** The backend over a cluster client (a one-node Redis Cluster): slot-routed scripts, node renewal groups, notices. */
class RedisClusterBackendTest {

    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static RedisServerProcess server;
    private static RedisClusterClient client;

    @BeforeAll
    static void startCluster() {
        server = RedisServerProcess.startSingleNodeCluster();
        client = RedisClusterClient.builder()
                .nodes(Set.of(new HostAndPort(server.host(), server.port())))
                .clientConfig(DefaultJedisClientConfig.builder()
                        .timeoutMillis(RedisTestSupport.CLIENT_TIMEOUT_MILLIS).build())
                .build();
    }

    @AfterAll
    static void stopCluster() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void clusterClientGroupsRenewalsByTheNodeOwningTheSlot() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            assertThat(backend.isCluster()).isTrue();
            // The node's own CLUSTER SLOTS entry has an empty host until another node met it.
            assertThat(backend.nodeOf("{x}").name()).endsWith(":" + server.port());
            assertThat(backend.nodeOf(findKeyInAnotherSlot("{x}"))).isEqualTo(backend.nodeOf("{x}"));
        }
    }

    @Test
    void acquireRenewAndReleaseWorkThroughTheClusterClient() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build(); Jedis admin = server.admin()) {
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "a}b {c}", "me", 10_000)).isInstanceOf(AcquireResult.Acquired.class);
            long first = backend.issueFencingToken(LockKind.EXCLUSIVE, "a}b {c}", "me").orElseThrow();
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "a}b {c}", "you", 10_000)).isInstanceOf(AcquireResult.Held.class);
            assertThat(backend.renew(List.of(new LeaseRenewal("a}b {c}", "me", 20_000))))
                    .containsExactly(RenewalResult.RENEWED);
            assertThat(backend.release(LockKind.EXCLUSIVE, "a}b {c}", "me", 0)).isEqualTo(ReleaseResult.RELEASED);

            admin.scriptFlush();
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "a}b {c}", "you", 10_000)).isInstanceOf(AcquireResult.Acquired.class);
            // The issuing script, too, is sent in full to a node that forgot it.
            long second = backend.issueFencingToken(LockKind.EXCLUSIVE, "a}b {c}", "you").orElseThrow();
            assertThat(second).isGreaterThan(first);
        }
    }

    @Test
    void aBatchAcrossSlotsOfOneNodeIsRenewedEvenAfterTheNodeForgotTheScripts() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build(); Jedis admin = server.admin()) {
            String other = findKeyInAnotherSlot("k1");
            backend.tryAcquire(LockKind.EXCLUSIVE, "k1", "o", 1_000);
            backend.tryAcquire(LockKind.EXCLUSIVE, other, "o", 1_000);
            backend.tryAcquire(LockKind.EXCLUSIVE, "k2", "someone-else", 1_000);
            List<LeaseRenewal> batch = List.of(new LeaseRenewal("k1", "o", 60_000), new LeaseRenewal("gone", "o", 60_000),
                    new LeaseRenewal(other, "o", 60_000), new LeaseRenewal("k2", "o", 60_000));

            assertThat(backend.renew(batch)).containsExactly(RenewalResult.RENEWED, RenewalResult.EXPIRED,
                    RenewalResult.RENEWED, RenewalResult.TAKEN);
            admin.scriptFlush();
            assertThat(backend.renew(batch)).containsExactly(RenewalResult.RENEWED, RenewalResult.EXPIRED,
                    RenewalResult.RENEWED, RenewalResult.TAKEN);
            assertThat(admin.pttl(KEYS.lockKey("k1"))).isGreaterThan(30_000L);
            assertThat(admin.pttl(KEYS.lockKey(other))).isGreaterThan(30_000L);
            assertThat(admin.pttl(KEYS.lockKey("k2"))).isLessThanOrEqualTo(1_000L);
            backend.release(LockKind.EXCLUSIVE, "k1", "o", 0);
            backend.release(LockKind.EXCLUSIVE, other, "o", 0);
        }
    }

    @Test
    void releaseNoticeReachesTheSubscriberOverTheClusterClient() throws Exception {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            CountDownLatch released = new CountDownLatch(1);
            try (Subscription subscription = backend.capabilities().releaseNotices().orElseThrow()
                    .subscribe("order-9", released::countDown)) {
                assertThat(subscription.awaitActive(BOUND)).isTrue();
                backend.tryAcquire(LockKind.EXCLUSIVE, "order-9", "a", 10_000);
                RedisTestSupport.askAsAnotherOwner(backend, "order-9");
                backend.release(LockKind.EXCLUSIVE, "order-9", "a", 0);
                assertThat(released.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            }
        }
    }

    private static String findKeyInAnotherSlot(String key) {
        for (int i = 0; ; i++) {
            String candidate = "other-" + i;
            if (KEYS.slot(candidate) != KEYS.slot(key)) {
                return candidate;
            }
        }
    }
}
