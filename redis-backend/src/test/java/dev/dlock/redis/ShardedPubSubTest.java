package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static dev.dlock.redis.RedisTestSupport.await;
import static dev.dlock.redis.RedisTestSupport.keyOwnedBy;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.ReleaseNotices.Subscription;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/**
 * Sharded pub/sub on a Redis 7 cluster of 3 masters + 1 replica each: releases are SPUBLISHed on the
 * master owning the key's slot, waiters hold one SSUBSCRIBE connection per master, and a failover
 * moves the subscription to the promoted replica. The last test kills a master, so it runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ShardedPubSubTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private static final Duration BOUND = Duration.ofSeconds(10);

    private static RedisClusterSetup cluster;
    private static RedisClusterClient client;

    @BeforeAll
    static void start() {
        cluster = RedisClusterSetup.start(3, 1);
        assumeTrue(
                ClusterNodes.majorVersion("redis_version:" + cluster.nodes().get(0).version()) >= 7,
                "sharded pub/sub needs Redis 7+, the configured redis-server is " + cluster.nodes().get(0).version());
        client = TopologyBackendFactory.clusterClient(cluster.seeds(), 5, Duration.ofMillis(1500));
    }

    @AfterAll
    static void stop() throws Exception {
        RedisTestSupport.closeAll(client, cluster);
    }

    @Test
    @Order(1)
    void aClusterClientOnRedis7ChoosesShardedPubSubAndTheOverrideWins() {
        try (RedisLockBackend detected = RedisLockBackend.builder(client).build();
             RedisLockBackend forcedClassic = RedisLockBackend.builder(client).shardedPubSub(false).build()) {
            assertThat(detected.usesShardedPubSub()).isTrue();
            assertThat(forcedClassic.usesShardedPubSub()).isFalse();
        }
    }

    @Test
    @Order(2)
    void aPinnedShardedReleaseIsSpublishedOnlyOnTheOwningMasterAndWakesTheWaiterOnEveryMaster() throws Exception {
        // Pinned, so that no classic PUBLISH (broadcast over the cluster bus) goes with the SPUBLISH.
        try (RedisLockBackend holderBackend = RedisLockBackend.builder(client).shardedPubSub(true).build();
             RedisLockBackend waiterBackend = RedisLockBackend.builder(client).shardedPubSub(true).build();
             LockManager holder = LockManager.builder(holderBackend).build();
             LockManager waiter = LockManager.builder(waiterBackend).build()) {
            for (RedisServerProcess master : cluster.currentMasters()) {
                String key = keyOwnedBy(cluster, master, "sharded-notice-");
                String channel = KEYS.releaseChannel(key);
                LockHandle lock = holder.acquire(key, Duration.ZERO);
                Supplier<Long> waiting = RedisTestSupport.startWaiter(waiter, key, Duration.ofSeconds(25));
                await("the waiter's SSUBSCRIBE on " + master.uri(), BOUND, () -> shardSubscribers(master, channel) == 1);
                Map<String, Map<String, Long>> before = commandCallsByNode();

                long releasedAt = System.nanoTime();
                lock.close();

                RedisTestSupport.assertWokenByNotice(waiting, releasedAt, master.uri());
                Map<String, Map<String, Long>> after = commandCallsByNode();
                // The holder's release only: the waiter's own release, with nobody else asking, publishes nothing.
                assertThat(delta(before, after, master.uri(), "spublish")).as("SPUBLISH on the owner").isEqualTo(1);
                for (RedisServerProcess node : cluster.nodes()) {
                    assertThat(delta(before, after, node.uri(), "publish")).as("classic PUBLISH on %s", node.uri()).isZero();
                    if (node.port() != master.port()) {
                        assertThat(delta(before, after, node.uri(), "spublish")).as("SPUBLISH on %s", node.uri()).isZero();
                        assertThat(shardSubscribers(node, channel)).as("subscribers on %s", node.uri()).isZero();
                    }
                }
            }
        }
    }

    @Test
    @Order(3)
    void aWaiterOnClassicNoticesIsWokenByAReleaseFromABackendThatChoseShardedOnes() {
        // Two JVMs of a rolling upgrade: one pinned classic notices, the other found Redis 7 everywhere.
        try (RedisLockBackend holderBackend = RedisLockBackend.builder(client).build();
             RedisLockBackend waiterBackend = RedisLockBackend.builder(client).shardedPubSub(false).build();
             LockManager holder = LockManager.builder(holderBackend).leaseTime(Duration.ofSeconds(30)).build();
             LockManager waiter = LockManager.builder(waiterBackend).build()) {
            assertThat(holderBackend.usesShardedPubSub()).isTrue();
            String key = "mixed-modes";
            String channel = KEYS.releaseChannel(key);
            LockHandle lock = holder.acquire(key, Duration.ZERO);
            Supplier<Long> waiting = RedisTestSupport.startWaiter(waiter, key, Duration.ofSeconds(40));
            await("the waiter's classic SUBSCRIBE", BOUND, () -> classicSubscribers(channel) == 1);

            long releasedAt = System.nanoTime();
            lock.close();

            RedisTestSupport.assertWokenByNotice(waiting, releasedAt, "a classic waiter (holder lease 30 s)");
        }
    }

    @Test
    @Order(4)
    void channelsOnEveryMasterShareOneSubscriberConnectionPerMaster() throws Exception {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            List<Subscription> subscriptions = new ArrayList<>();
            Set<String> channelNames = new HashSet<>();
            for (RedisServerProcess master : cluster.currentMasters()) {
                for (int i = 0; i < 20; i++) {
                    String key = keyOwnedBy(cluster, master, "per-node-" + i + "-");
                    channelNames.add(KEYS.releaseChannel(key));
                    subscriptions.add(backend.capabilities().releaseNotices().orElseThrow().subscribe(key, () -> { }));
                }
            }
            for (Subscription subscription : subscriptions) {
                assertThat(subscription.awaitActive(BOUND)).isTrue();
            }
            long subscribed = 0;
            for (RedisServerProcess master : cluster.currentMasters()) {
                List<Integer> perConnection = shardSubscriptionsPerConnection(master);
                assertThat(perConnection).as("sharded subscriber connections on %s", master.uri()).hasSize(1);
                subscribed += perConnection.get(0);
            }
            assertThat(subscribed).as("every channel subscribed once, on its owner").isEqualTo(channelNames.size());
            ShardedPubSubTransport notices = (ShardedPubSubTransport) backend.createdReleaseNotices().transport();
            assertThat(notices.openSessions()).isEqualTo(3);

            subscriptions.forEach(Subscription::close);
            await("every sharded subscriber connection closed", BOUND, () -> notices.openSessions() == 0
                    && cluster.currentMasters().stream().allMatch(m -> shardSubscriptionsPerConnection(m).isEmpty()));
        }
    }

    @Test
    @Order(5)
    void afterAFailoverTheSubscriptionMovesToThePromotedReplicaAndHearsReleases() throws Exception {
        RedisServerProcess victim = cluster.initialMasters().get(0);
        String key = keyOwnedBy(cluster, victim, "sharded-failover-");
        String channel = KEYS.releaseChannel(key);
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch lost = new CountDownLatch(1);
        try (RedisLockBackend waiterBackend = RedisLockBackend.builder(client).build();
             RedisLockBackend holderBackend = RedisLockBackend.builder(client).build();
             Subscription subscription = waiterBackend.capabilities().releaseNotices().orElseThrow().subscribe(key, () -> {
                 calls.incrementAndGet();
                 lost.countDown();
             })) {
            assertThat(subscription.awaitActive(BOUND)).isTrue();

            victim.kill();
            assertThat(lost.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("listener called on connection loss").isTrue();
            assertThat(subscription.isActive()).isFalse();
            RedisServerProcess promoted = cluster.awaitPromotion(KEYS.lockKey(key), victim, Duration.ofSeconds(30));

            assertThat(subscription.awaitActive(Duration.ofSeconds(20))).as("resubscribed on the promoted replica").isTrue();
            await("listener called again once re-confirmed", BOUND, () -> calls.get() == 2);
            assertThat(shardSubscribers(promoted, channel)).isEqualTo(1);

            RedisTestSupport.retrying(BOUND, () -> holderBackend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", 30_000));
            RedisTestSupport.askAsAnotherOwner(waiterBackend, key);
            holderBackend.release(LockKind.EXCLUSIVE, key, "holder", 0);
            await("the release on the promoted replica reaches the listener", BOUND, () -> calls.get() == 3);
        }
    }

    /** Classic subscribers of {@code channel} over all nodes: each node counts the connections it holds itself. */
    private static long classicSubscribers(String channel) {
        long subscribers = 0;
        for (RedisServerProcess node : cluster.nodes()) {
            try (Jedis admin = node.admin()) {
                subscribers += admin.pubsubNumSub(channel).getOrDefault(channel, 0L);
            }
        }
        return subscribers;
    }

    private static long shardSubscribers(RedisServerProcess node, String channel) {
        try (Jedis admin = node.admin()) {
            return admin.pubsubShardNumSub(channel).getOrDefault(channel, 0L);
        }
    }

    /** The {@code ssub=} count of every client connection of {@code node} that holds sharded subscriptions. */
    private static List<Integer> shardSubscriptionsPerConnection(RedisServerProcess node) {
        List<Integer> counts = new ArrayList<>();
        String clients;
        try (Jedis admin = node.admin()) {
            clients = admin.clientList();
        }
        for (String line : clients.split("\n")) {
            for (String field : line.trim().split(" ")) {
                if (field.startsWith("ssub=") && Integer.parseInt(field.substring(5)) > 0) {
                    counts.add(Integer.parseInt(field.substring(5)));
                }
            }
        }
        return counts;
    }

    private static Map<String, Map<String, Long>> commandCallsByNode() {
        Map<String, Map<String, Long>> calls = new HashMap<>();
        for (RedisServerProcess node : cluster.nodes()) {
            if (node.isRunning()) {
                calls.put(node.uri(), node.commandCalls());
            }
        }
        return calls;
    }

    private static long delta(Map<String, Map<String, Long>> before, Map<String, Map<String, Long>> after,
                              String node, String command) {
        return after.get(node).getOrDefault(command, 0L) - before.get(node).getOrDefault(command, 0L);
    }
}
