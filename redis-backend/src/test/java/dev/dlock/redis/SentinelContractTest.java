package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.redis.RedisSentinelSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;

/**
 * The backend contract over a sentinel-backed client (master, replica, three sentinels). Crashing
 * the store kills both data nodes and restarting starts both again, empty, and returns once the
 * sentinels agree on a master with nothing flagged (no failover they began while the nodes were down
 * can then swap the master under the next test); the sentinels stay up, as they would in production.
 * The command count sums the data nodes' client commands, without sentinel and replication housekeeping.
 */
class SentinelContractTest extends StoreFailureContractTest {

    static RedisSentinelSetup sentinel;

    @BeforeAll
    static void startSentinel() {
        sentinel = RedisSentinelSetup.start();
    }

    @AfterAll
    static void stopSentinel() {
        if (sentinel != null) {
            sentinel.close();
        }
    }

    @Override
    protected BackendFactory factory() {
        return new TopologyBackendFactory();
    }

    @Override
    protected String connection() {
        return TopologyBackendFactory.connection(TopologyBackendFactory.SENTINEL, sentinel.sentinelAddresses(),
                RedisSentinelSetup.MASTER_NAME);
    }

    @Override
    protected void deleteKey(String key) {
        try (Jedis admin = sentinel.currentMaster().admin()) {
            assertThat(admin.del(new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX).lockKey(key)))
                    .as("deleted the lock key").isEqualTo(1);
        }
    }

    @Override
    protected void wipeStore() {
        try (Jedis admin = sentinel.currentMaster().admin()) {
            admin.flushAll();
        }
    }

    @Override
    protected void crashStore() {
        sentinel.killDataNodes();
    }

    @Override
    protected void restartStore() {
        sentinel.restartDataNodes();
    }

    @Override
    protected long storeCommandCount() {
        return sentinel.dataNodes().stream().mapToLong(RedisServerProcess::clientCommandCalls).sum();
    }
}
