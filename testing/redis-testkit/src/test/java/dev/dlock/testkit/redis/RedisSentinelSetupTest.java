package dev.dlock.testkit.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * The sentinel deployment the sentinel contract runs on: after a crash of its data nodes long enough for the sentinels
 * to count the master down, a restart returns only once the sentinels are done with it, so no failover they started
 * can swap the master under the next test.
 */
class RedisSentinelSetupTest {

    /** Longer than the sentinels' down-after time (1 s): every sentinel flags the master down while the nodes are dead. */
    private static final Duration CRASH = Duration.ofMillis(1_500);
    /**
     * How long the deployment is watched after the restart for a master that changes or is flagged again: the
     * sentinels' PING period, within which a master they still counted down would be flagged again.
     */
    private static final Duration WATCH = Duration.ofSeconds(1);

    @Test
    void aRestartAfterACrashTheSentinelsNoticedReturnsASettledDeploymentThatStaysSettled() throws Exception {
        try (RedisSentinelSetup setup = RedisSentinelSetup.start()) {
            setup.killDataNodes();
            Thread.sleep(CRASH.toMillis());
            setup.restartDataNodes();

            HostAndPort master = setup.currentMasterAddress();
            RedisServerProcess masterNode = setup.nodeAt(master);
            long watchEnd = System.nanoTime() + WATCH.toNanos();
            do {
                for (RedisServerProcess sentinel : setup.sentinels()) {
                    try (Jedis admin = sentinel.admin()) {
                        Map<String, String> view = admin.sentinelMaster(RedisSentinelSetup.MASTER_NAME);
                        assertThat(view.get("flags")).as("sentinel %s's flags for the master", sentinel.port()).isEqualTo("master");
                        assertThat(Integer.parseInt(view.get("port"))).as("sentinel %s's master", sentinel.port())
                                .isEqualTo(master.getPort());
                    }
                }
                for (RedisServerProcess node : setup.dataNodes()) {
                    try (Jedis admin = node.admin()) {
                        String replication = admin.info("replication");
                        if (node == masterNode) {
                            assertThat(replication).as("the master's replication info").contains("role:master");
                        } else {
                            assertThat(replication).as("the replica's replication info")
                                    .contains("master_port:" + master.getPort()).contains("master_link_status:up");
                        }
                    }
                }
                Thread.sleep(50);
            } while (System.nanoTime() < watchEnd);
        }
    }
}
