package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;

/**
 * The backend contract over a cluster client on a three-master Redis Cluster. Deleting a key goes
 * to the master owning its slot; wiping flushes every master; crashing kills every node and
 * restarting starts every node again (empty, keeping its slots); the command count sums every node.
 */
class ClusterContractTest extends StoreFailureContractTest {

    static RedisClusterSetup cluster;

    @BeforeAll
    static void startCluster() {
        cluster = RedisClusterSetup.start(3, 0);
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Override
    protected BackendFactory factory() {
        return new TopologyBackendFactory();
    }

    @Override
    protected String connection() {
        return TopologyBackendFactory.connection(TopologyBackendFactory.CLUSTER, cluster.seeds(), null);
    }

    @Override
    protected void deleteKey(String key) {
        String lockKey = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX).lockKey(key);
        try (Jedis admin = cluster.masterOf(lockKey).admin()) {
            assertThat(admin.del(lockKey)).as("deleted the lock key").isEqualTo(1);
        }
    }

    @Override
    protected void wipeStore() {
        for (RedisServerProcess master : cluster.currentMasters()) {
            try (Jedis admin = master.admin()) {
                admin.flushAll();
            }
        }
    }

    @Override
    protected void crashStore() {
        cluster.killAll();
    }

    @Override
    protected void restartStore() {
        cluster.restartAll();
    }

    @Override
    protected long storeCommandCount() {
        return cluster.nodes().stream().mapToLong(RedisServerProcess::clientCommandCalls).sum();
    }
}
