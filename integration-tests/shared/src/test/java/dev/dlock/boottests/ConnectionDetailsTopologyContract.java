package dev.dlock.boottests;

import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisSentinelSetup;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application whose only Redis configuration is a connection details bean describing a Sentinel
 * deployment or a Cluster (what a service connection gives): dlock's default client locks in the master
 * the sentinels name, in the database the details say, and across the cluster's masters. Each Boot
 * line's module extends this with its own connection details type.
 */
@ExtendWith(OutputCaptureExtension.class)
public abstract class ConnectionDetailsTopologyContract {

    /** The database the Sentinel details name: not 0, so that the details' database is seen to be used. */
    protected static final int SENTINEL_DATABASE = 2;

    /**
     * The store auto-configurations only; spring.data.redis points at a port nothing listens on, so a
     * client that ignored the details could never reach a Redis this test did not start.
     */
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RedisLockStoreAutoConfiguration.class,
                    DistributedLockAutoConfiguration.class))
            .withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=1", "dlock.redis.timeout=5s");

    /** {@code runner} with a connection details bean for Sentinel: {@code master} behind {@code sentinels}, database {@link #SENTINEL_DATABASE}. */
    protected abstract ApplicationContextRunner withSentinelDetails(ApplicationContextRunner runner, String master,
                                                                    List<HostAndPort> sentinels);

    /** {@code runner} with a connection details bean for a Cluster with these seed nodes. */
    protected abstract ApplicationContextRunner withClusterDetails(ApplicationContextRunner runner, List<HostAndPort> seeds);

    @Test
    void locksInTheMasterTheSentinelsOfTheDetailsName(CapturedOutput output) {
        try (RedisSentinelSetup sentinel = RedisSentinelSetup.start()) {
            withSentinelDetails(runner, RedisSentinelSetup.MASTER_NAME, new ArrayList<>(sentinel.sentinelAddresses()))
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        try (LockHandle lock = context.getBean(LockManager.class).acquire("sentinel-key", Duration.ZERO);
                             Jedis master = sentinel.currentMaster().admin()) {
                            master.select(SENTINEL_DATABASE);
                            assertThat(master.exists("dlock:{sentinel-key}"))
                                    .as("lock key in the master's database %d", SENTINEL_DATABASE).isTrue();
                            assertThat(lock.fencingToken()).isPositive();
                        }
                    });
        }
        assertThat(output.getAll()).contains("dlock connects to Redis sentinel")
                .contains("master '" + RedisSentinelSetup.MASTER_NAME + "'").contains("Redis connection details bean");
    }

    @Test
    void locksAcrossTheMastersOfTheClusterTheDetailsName(CapturedOutput output) {
        try (RedisClusterSetup cluster = RedisClusterSetup.start(3, 0)) {
            List<HostAndPort> seeds = new ArrayList<>(cluster.seeds()).subList(0, 1);
            withClusterDetails(runner, seeds).run(context -> {
                assertThat(context).hasNotFailed();
                LockManager locks = context.getBean(LockManager.class);
                Set<Integer> mastersUsed = new HashSet<>();
                for (int i = 0; i < 8; i++) {
                    String key = "cluster-key-" + i;
                    try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
                        RedisServerProcess owner = cluster.masterOf("dlock:{" + key + "}");
                        try (Jedis admin = owner.admin()) {
                            assertThat(admin.exists("dlock:{" + key + "}")).as("%s on the master of its slot", key).isTrue();
                        }
                        assertThat(lock.fencingToken()).isPositive();
                        mastersUsed.add(owner.port());
                    }
                }
                // A single-node client would have been sent MOVED for the slots of the other masters.
                assertThat(mastersUsed).as("masters that held a lock").hasSizeGreaterThan(1);
            });
        }
        assertThat(output.getAll()).contains("dlock connects to Redis cluster").contains("Redis connection details bean");
    }
}
