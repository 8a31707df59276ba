package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.AcquireResult;
import dev.dlock.core.LeaseRenewal;
import dev.dlock.core.ReleaseNotices.Subscription;
import dev.dlock.core.ReleaseResult;
import dev.dlock.core.RenewalResult;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/** The backend over a cluster client (a one-node Redis Cluster): slot-routed scripts, slot renewal groups, notices. */
class RedisClusterBackendTest {

    private static final Duration BOUND = Duration.ofSeconds(10);

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
    void clusterClientSwitchesToSlotRenewalGroups() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            assertThat(backend.isCluster()).isTrue();
            assertThat(backend.renewalGroup("{x}")).isEqualTo(new RedisKeys("dlock:").slot("{x}"));
        }
    }

    @Test
    void acquireRenewAndReleaseWorkThroughTheClusterClient() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build(); Jedis admin = server.admin()) {
            long first = ((AcquireResult.Acquired) backend.tryAcquire("a}b {c}", "me", 10_000)).fencingToken();
            assertThat(backend.tryAcquire("a}b {c}", "you", 10_000)).isInstanceOf(AcquireResult.Held.class);
            assertThat(backend.renew(List.of(new LeaseRenewal("a}b {c}", "me", 20_000))))
                    .containsExactly(RenewalResult.RENEWED);
            assertThat(backend.release("a}b {c}", "me", 0)).isEqualTo(ReleaseResult.RELEASED);

            admin.scriptFlush();
            long second = ((AcquireResult.Acquired) backend.tryAcquire("a}b {c}", "you", 10_000)).fencingToken();
            assertThat(second).isGreaterThan(first);
        }
    }

    @Test
    void renewBatchAcrossSlotsIsRejectedBeforeReachingRedis() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            String other = findKeyInAnotherSlot(backend, "k1");
            assertThatThrownBy(() -> backend.renew(List.of(
                    new LeaseRenewal("k1", "o", 1_000), new LeaseRenewal(other, "o", 1_000))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("slot");
        }
    }

    @Test
    void releaseNoticeReachesTheSubscriberOverTheClusterClient() throws Exception {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            CountDownLatch released = new CountDownLatch(1);
            try (Subscription subscription = backend.releaseNotices().orElseThrow()
                    .subscribe("order-9", released::countDown)) {
                assertThat(subscription.awaitActive(BOUND)).isTrue();
                backend.tryAcquire("order-9", "a", 10_000);
                backend.release("order-9", "a", 0);
                assertThat(released.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            }
        }
    }

    private static String findKeyInAnotherSlot(RedisLockBackend backend, String key) {
        for (int i = 0; ; i++) {
            String candidate = "other-" + i;
            if (!backend.renewalGroup(candidate).equals(backend.renewalGroup(key))) {
                return candidate;
            }
        }
    }
}
