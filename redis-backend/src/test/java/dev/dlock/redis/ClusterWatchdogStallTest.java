package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClusterClient;

/** One stalled cluster master must not take the leases of the healthy masters with it (issue 10, item 8). */
class ClusterWatchdogStallTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    /** A lease a loaded machine can renew in time: with 600 ms, a busy machine lost leases on the healthy masters too. */
    private static final Duration LEASE = Duration.ofSeconds(2);
    /** How long the test waits for the engine to react to the stall: far beyond the lease, for a loaded machine. */
    private static final Duration STALL_BOUND = Duration.ofSeconds(30);

    private static RedisClusterSetup cluster;
    private static RedisClusterClient client;

    @BeforeAll
    static void start() {
        cluster = RedisClusterSetup.start(3, 0);
        // A client that waits out a stalled node, as one with a generous socket timeout does.
        client = RedisClusterClient.builder().nodes(cluster.seeds())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(10_000).build())
                .maxAttempts(1).build();
    }

    @AfterAll
    static void stop() throws Exception {
        RedisTestSupport.closeAll(client, cluster);
    }

    @Test
    void leasesOnHealthyMastersAreRenewedWhileAnotherMasterIsStalled() throws Exception {
        Set<String> lost = ConcurrentHashMap.newKeySet();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).leaseTime(LEASE)
                     .listener(new LockListener() {
                         @Override
                         public void onLeaseLost(String lockName, String key, String reason) {
                             lost.add(key);
                         }
                     }).build()) {
            RedisServerProcess stalled = cluster.currentMasters().get(0);
            List<LockHandle> onStalled = new ArrayList<>();
            List<LockHandle> onHealthy = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                String key = "stall-" + i;
                LockHandle handle = locks.acquire(key, Duration.ofSeconds(5));
                (cluster.masterOf(KEYS.lockKey(key)).port() == stalled.port() ? onStalled : onHealthy).add(handle);
            }
            assertThat(onStalled).isNotEmpty();
            assertThat(onHealthy).isNotEmpty();
            RedisTestSupport.await("a first renewal round", STALL_BOUND, () -> locks.admin().watchdogRenewCallCount() > 0);

            // The master stays stopped until the test saw what it waits for (whatever the machine's load), and runs
            // again when the block ends, also when an assertion failed.
            try (RedisServerProcess.Stall stall = stalled.stall()) {
                long stalledAt = System.nanoTime();
                RedisTestSupport.await("the stalled master's leases to read as not held", STALL_BOUND,
                        () -> onStalled.stream().noneMatch(LockHandle::isHeld));
                // A stall of two leases: the healthy masters' leases live only if renewed during it.
                long renewalsBefore = locks.admin().watchdogRenewCallCount();
                RedisTestSupport.await("two leases of stall and renewal calls on the healthy masters", STALL_BOUND,
                        () -> System.nanoTime() - stalledAt > 2 * LEASE.toNanos()
                                && locks.admin().watchdogRenewCallCount() >= renewalsBefore + 3);
                assertThat(stalled.isSuspended()).as("the master is still stalled").isTrue();
                assertThat(onHealthy).as("leases on healthy masters, renewed during the stall").allMatch(LockHandle::isHeld);
            }

            assertThat(onHealthy).as("leases on healthy masters, renewed through the stall").allMatch(LockHandle::isHeld);
            assertThat(lost).as("keys reported lost").doesNotContainAnyElementsOf(onHealthy.stream().map(LockHandle::key).toList());
            onHealthy.forEach(LockHandle::close);
            for (LockHandle handle : onStalled) {
                RedisTestSupport.closeQuietly(handle);
            }
        }
    }
}
