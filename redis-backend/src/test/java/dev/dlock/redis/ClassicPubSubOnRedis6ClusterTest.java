package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseNotices.Subscription;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;

/** A Redis 6.2 cluster (the embedded binary) has no sharded pub/sub: the backend keeps classic PUBLISH/SUBSCRIBE. */
class ClassicPubSubOnRedis6ClusterTest {

    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static RedisClusterSetup cluster;
    private static RedisClusterClient client;

    @BeforeAll
    static void start() {
        cluster = RedisClusterSetup.startEmbedded(3, 0);
        client = TopologyBackendFactory.clusterClient(cluster.seeds(), 3, Duration.ofSeconds(3));
    }

    @AfterAll
    static void stop() throws Exception {
        RedisTestSupport.closeAll(client, cluster);
    }

    @Test
    void releaseNoticesFallBackToClassicPubSubOnEveryMaster() throws Exception {
        assertThat(cluster.nodes().get(0).version()).startsWith("6.");
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            assertThat(backend.usesShardedPubSub()).isFalse();
            for (RedisServerProcess master : cluster.currentMasters()) {
                String key = RedisTestSupport.keyOwnedBy(cluster, master, "classic-");
                CountDownLatch released = new CountDownLatch(1);
                try (Subscription subscription = backend.capabilities().releaseNotices().orElseThrow().subscribe(key, released::countDown)) {
                    assertThat(subscription.awaitActive(BOUND)).isTrue();
                    backend.tryAcquire(LockKind.EXCLUSIVE, key, "a", 10_000);
                    RedisTestSupport.askAsAnotherOwner(backend, key);
                    backend.release(LockKind.EXCLUSIVE, key, "a", 0);
                    assertThat(released.await(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                            .as("notice for %s", master.uri()).isTrue();
                }
            }
            assertThat(backend.createdReleaseNotices().transport()).isInstanceOf(ClassicPubSubTransport.class);
            assertThat(cluster.currentMasters()).allSatisfy(m -> assertThat(m.commandCalls()).doesNotContainKey("spublish"));
        }
    }

    @Test
    void aReleaseForcedToShardedNoticesOnRedis6IsReportedAsTheReleaseItWas() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).shardedPubSub(true).build()) {
            for (RedisServerProcess master : cluster.currentMasters()) {
                String key = RedisTestSupport.keyOwnedBy(cluster, master, "forced-sharded-");
                long token = ((AcquireResult.Acquired) backend.tryAcquire(LockKind.EXCLUSIVE, key, "a", 10_000)).fencingToken();

                assertThat(backend.release(LockKind.EXCLUSIVE, key, "a", token)).as("release on %s", master.uri())
                        .isEqualTo(ReleaseResult.RELEASED);
                try (Jedis admin = master.admin()) {
                    assertThat(admin.exists(KEYS.lockKey(key))).as("key freed on %s", master.uri()).isFalse();
                }
            }
        }
    }

    @Test
    void shardedPubSubCannotBeForcedOnANonClusterClient() {
        try (RedisClient standalone = RedisTestSupport.client(cluster.nodes().get(0))) {
            assertThatThrownBy(() -> RedisLockBackend.builder(standalone).shardedPubSub(true).build())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("shardedPubSub(true) needs a cluster client");
        }
    }

    @Test
    void theMajorVersionIsReadFromInfoServer() {
        assertThat(ClusterNodes.majorVersion("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:0\r\n")).isEqualTo(7);
        assertThat(ClusterNodes.majorVersion("redis_version:6.2.6\r\n")).isEqualTo(6);
        assertThat(ClusterNodes.majorVersion("redis_version:10.1\r\n")).isEqualTo(10);
        assertThat(ClusterNodes.majorVersion("no version here")).isZero();
    }
}
