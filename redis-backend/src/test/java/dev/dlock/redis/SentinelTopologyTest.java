package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.redis.RedisSentinelSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisSentinelClient;

/** Sentinel-specific behaviour: WAIT for replicas, and a master failover while locks are held and taken. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SentinelTopologyTest {

    private static final Logger log = LoggerFactory.getLogger(SentinelTopologyTest.class);
    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static RedisSentinelSetup sentinel;
    private static RedisSentinelClient client;

    @BeforeAll
    static void start() {
        sentinel = RedisSentinelSetup.start();
        client = TopologyBackendFactory.sentinelClient(sentinel.sentinelAddresses(), RedisSentinelSetup.MASTER_NAME);
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
        }
        if (sentinel != null) {
            sentinel.close();
        }
    }

    @Test
    @Order(1)
    void waitForReplicasReturnsOnceTheReplicaHasTheLock() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).waitForReplicas(1, Duration.ofSeconds(2)).build()) {
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "wait-ok", "me", 10_000)).isInstanceOf(AcquireResult.Acquired.class);
            RedisServerProcess replica = sentinel.dataNodes().get(1);
            try (Jedis admin = replica.admin()) {
                // No polling: WAIT returned only after the replica had applied the write.
                assertThat(admin.get(KEYS.lockKey("wait-ok"))).isEqualTo("me");
            }
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "wait-ok", "you", 10_000)).as("a held key needs no WAIT")
                    .isInstanceOf(AcquireResult.Held.class);
            backend.release(LockKind.EXCLUSIVE, "wait-ok", "me", 0);
        }
    }

    @Test
    @Order(2)
    void withoutAcknowledgingReplicasTheAcquireFailsAndLeavesNothingHeld() {
        RedisServerProcess replica = sentinel.dataNodes().get(1);
        try (RedisLockBackend waiting = RedisLockBackend.builder(client).waitForReplicas(1, Duration.ofMillis(300)).build();
             RedisLockBackend plain = RedisLockBackend.builder(client).build()) {
            replica.kill();
            long start = System.nanoTime();
            assertThatThrownBy(() -> waiting.tryAcquire(LockKind.EXCLUSIVE, "wait-fails", "me", 10_000))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("0 of 1 replicas");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
            try (Jedis admin = sentinel.currentMaster().admin()) {
                assertThat(admin.exists(KEYS.lockKey("wait-fails"))).as("released after the failed WAIT").isFalse();
            }
            assertThat(plain.tryAcquire(LockKind.EXCLUSIVE, "wait-fails", "you", 10_000)).as("off by default: no replica needed")
                    .isInstanceOf(AcquireResult.Acquired.class);
        } finally {
            replica.relaunch();
        }
        RedisTestSupport.await("replica linked again", Duration.ofSeconds(20), () -> {
            try (Jedis admin = replica.admin()) {
                return admin.info("replication").contains("master_link_status:up");
            }
        });
    }

    @Test
    @Order(3)
    void afterTheMasterIsKilledAcquisitionWorksAgainOnThePromotedReplica() throws Exception {
        List<String> lost = Collections.synchronizedList(new ArrayList<>());
        Map<String, Long> watchdogNews = new ConcurrentHashMap<>();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofSeconds(6))
                     .listener(RedisTestSupport.lossRecorder(lost, watchdogNews)).build()) {
            List<LockHandle> held = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                held.add(locks.acquire("failover-held-" + i, Duration.ofSeconds(5)));
            }
            FailoverProbe probe = FailoverProbe.start(locks, "failover-loop-");
            probe.awaitSuccesses(20);
            HostAndPort oldMaster = sentinel.currentMasterAddress();
            long killedAt = System.nanoTime();
            sentinel.nodeAt(oldMaster).kill();
            RedisServerProcess promoted = sentinel.awaitFailoverFrom(oldMaster, Duration.ofSeconds(30));
            long promotedAt = System.nanoTime();
            probe.awaitSuccessAfter(promotedAt, Duration.ofSeconds(30));
            FailoverProbe.Report report = probe.stop();
            log.info("Sentinel failover: promoted {} after {} ms; acquisitions failed for {} ms ({} errors, longest call {} ms)",
                    promoted.uri(), (promotedAt - killedAt) / 1_000_000, report.errorWindowMillis(), report.errors(),
                    report.longestCallMillis());
            assertThat(report.longestCallMillis()).as("no call hangs").isLessThan(15_000);
            assertThat(report.errorWindowMillis()).as("bounded error window").isLessThan(30_000);
            RedisTestSupport.awaitWatchdogNewsAfter(held, watchdogNews, promotedAt);
            RedisTestSupport.assertHeldOrReportedLost(held, lost, locks, backend);
            held.forEach(RedisTestSupport::closeQuietly);
        }
    }
}
