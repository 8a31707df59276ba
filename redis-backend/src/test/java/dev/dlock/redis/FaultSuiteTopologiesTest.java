package dev.dlock.redis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.dlock.testkit.faults.Fault;
import dev.dlock.testkit.faults.FaultGuarantees;
import dev.dlock.testkit.faults.FaultReport;
import dev.dlock.testkit.faults.FaultSuite;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * The fault suite's short mode on Redis Cluster (3 masters with a replica each; the master of a hot key's
 * slot is killed and its replica takes over) and on Redlock (5 independent masters; one is killed and
 * started again empty, or a minority of two is paused past the lease). The same guarantees as on
 * standalone Redis and Sentinel must hold; see {@link FaultSuiteTest} and docs/reliability.md.
 */
@Tag("fault-suite")
class FaultSuiteTopologiesTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    @Test
    void clusterUnderKillsPausesAndFailoversOfAHotKeysMaster() throws Exception {
        try (RedisClusterSetup cluster = RedisClusterSetup.start(3, 1)) {
            FaultSuite.Settings settings = FaultSuite.Settings.shortMode().fromSystemProperties();
            Random picks = new Random(settings.seed());
            String connection = TopologyBackendFactory.connection(TopologyBackendFactory.CLUSTER, cluster.seeds(), null);
            FaultReport report = FaultSuite.builder("Redis Cluster (3 masters + 3 replicas)", new TopologyBackendFactory(), connection)
                    .settings(settings)
                    .fault(Fault.killHolder())
                    .fault(Fault.pauseHolder(settings.leaseTime().multipliedBy(2)))
                    .fault(new Fault() {
                        @Override
                        public String name() {
                            return "failover";
                        }

                        @Override
                        public String inject(Workers workers) {
                            List<String> hot = workers.hotKeys();
                            return failover(cluster, hot.get(picks.nextInt(hot.size())));
                        }
                    })
                    .directory(Path.of("target", "fault-suite", "cluster"))
                    .build().run();
            FaultGuarantees.assertHeld(report, FaultGuarantees.STORE_ERRORS);
        }
    }

    @Test
    void redlockUnderKillsPausesNodeRestartsAndAPausedMinority() throws Exception {
        List<RedisServerProcess> masters = new ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                masters.add(RedisServerProcess.start());
            }
            FaultSuite.Settings settings = FaultSuite.Settings.shortMode().fromSystemProperties();
            Duration lease = settings.leaseTime();
            Random picks = new Random(settings.seed());
            Set<HostAndPort> addresses = new LinkedHashSet<>();
            masters.forEach(master -> addresses.add(new HostAndPort(master.host(), master.port())));
            String connection = TopologyBackendFactory.connection(TopologyBackendFactory.REDLOCK, addresses, null);
            FaultReport report = FaultSuite.builder("Redlock (5 masters)", new TopologyBackendFactory(), connection)
                    .settings(settings)
                    .fault(Fault.killHolder())
                    .fault(Fault.pauseHolder(lease.multipliedBy(2)))
                    .fault(Fault.of("node-restart", () -> {
                        RedisServerProcess node = masters.get(picks.nextInt(masters.size()));
                        node.restart();
                        return "SIGKILL of master " + node.port() + " and a start on the same port, empty";
                    }))
                    .fault(Fault.of("minority-pause", () -> {
                        int first = picks.nextInt(masters.size());
                        List<RedisServerProcess> paused = List.of(masters.get(first), masters.get((first + 1) % masters.size()));
                        paused.forEach(RedisServerProcess::suspend);
                        try {
                            Thread.sleep(lease.multipliedBy(2).toMillis());
                        } finally {
                            paused.forEach(RedisServerProcess::resume);
                        }
                        return "SIGSTOP of masters " + paused.get(0).port() + " and " + paused.get(1).port()
                                + " for " + lease.multipliedBy(2).toMillis() + " ms";
                    }))
                    .directory(Path.of("target", "fault-suite", "redlock"))
                    .build().run();
            FaultGuarantees.assertHeld(report, FaultGuarantees.STORE_ERRORS);
        } finally {
            masters.forEach(RedisServerProcess::close);
        }
    }

    /**
     * Kills the master of {@code lockKey}'s slot, waits for its replica to take the slot over, and brings the
     * old master back; it rejoins as the new master's replica, so the slot can fail over again later.
     */
    private static String failover(RedisClusterSetup cluster, String lockKey) {
        String redisKey = KEYS.lockKey(lockKey);
        RedisServerProcess victim = cluster.masterOf(redisKey);
        long killedAt = System.nanoTime();
        victim.kill();
        RedisServerProcess promoted = cluster.awaitPromotion(redisKey, victim, Duration.ofSeconds(30));
        long promotedAfter = Duration.ofNanos(System.nanoTime() - killedAt).toMillis();
        victim.relaunch();
        RedisTestSupport.await("the old master " + victim.port() + " back as a linked replica", Duration.ofSeconds(30), () -> {
            try (Jedis admin = victim.admin()) {
                String replication = admin.info("replication");
                return replication.contains("role:slave") && replication.contains("master_link_status:up");
            } catch (RuntimeException e) {
                return false;
            }
        });
        return "SIGKILL of master " + victim.port() + " (slot of " + lockKey.substring(lockKey.lastIndexOf(':') + 1) + "); "
                + promoted.port() + " promoted after " + promotedAfter + " ms; old master back as replica";
    }
}
