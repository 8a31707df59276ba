package dev.dlock.redis;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.dlock.testkit.faults.Fault;
import dev.dlock.testkit.faults.FaultGuarantees;
import dev.dlock.testkit.faults.FaultReport;
import dev.dlock.testkit.faults.FaultSuite;
import dev.dlock.testkit.redis.RedisSentinelSetup;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * The fault suite's short mode on standalone Redis and on Sentinel: 3 worker JVMs × 6 threads writing
 * to the fencing referee while holders are killed and paused past their lease and the store restarts,
 * slows down, drops connections or fails over. What users rely on must hold in every run: no overlap
 * gets past the fencing check, no holder loses its lease without being told, nothing stays locked,
 * and the workload recovers after every fault. The long mode is the same test with
 * {@code -Ddlock.faults.minutes=30} (see docs/reliability.md); Cluster and Redlock are in
 * {@link FaultSuiteTopologiesTest}, outside the test command.
 */
class FaultSuiteTest {

    @Test
    void standaloneRedisUnderKillsPausesRestartsSlowRepliesAndCutConnections() throws Exception {
        try (RedisServerProcess redis = RedisServerProcess.start(); RespProxy proxy = RespProxy.start(redis)) {
            FaultSuite.Settings settings = FaultSuite.Settings.shortMode().fromSystemProperties();
            Duration lease = settings.leaseTime();
            FaultReport report = FaultSuite.builder("Redis " + redis.version() + " standalone", new RedisBackendFactory(), redis.uri())
                    .settings(settings)
                    // Worker 0 talks to Redis through the fault proxy; the others directly.
                    .workerConnection(worker -> worker == 0 ? "redis://" + proxy.host() + ":" + proxy.port() : redis.uri())
                    .fault(Fault.killHolder())
                    .fault(Fault.pauseHolder(lease.multipliedBy(2)))
                    .fault(Fault.of("store-restart", () -> {
                        redis.restart();
                        return "SIGKILL of redis-server and a start on the same port, empty";
                    }))
                    .fault(Fault.of("slow-replies", () -> {
                        Duration slowFor = lease.multipliedBy(2);
                        proxy.delayReplies(lease.plusMillis(200));
                        try {
                            Thread.sleep(slowFor.toMillis());
                        } finally {
                            proxy.passThrough();
                        }
                        return "worker 0's replies delayed by " + lease.plusMillis(200).toMillis() + " ms for " + slowFor.toMillis() + " ms";
                    }))
                    .fault(Fault.of("cut-connections", () -> {
                        proxy.cutConnections();
                        try {
                            Thread.sleep(lease.toMillis());
                        } finally {
                            proxy.acceptConnections();
                        }
                        return "worker 0's connections cut and refused for " + lease.toMillis() + " ms";
                    }))
                    .directory(Path.of("target", "fault-suite", "standalone"))
                    .build().run();
            FaultGuarantees.assertHeld(report, FaultGuarantees.STORE_ERRORS);
        }
    }

    @Test
    void sentinelUnderKillsPausesAndFailovers() throws Exception {
        try (RedisSentinelSetup sentinel = RedisSentinelSetup.start()) {
            FaultSuite.Settings settings = FaultSuite.Settings.shortMode().fromSystemProperties();
            String connection = TopologyBackendFactory.connection(TopologyBackendFactory.SENTINEL, sentinel.sentinelAddresses(),
                    RedisSentinelSetup.MASTER_NAME);
            FaultReport report = FaultSuite.builder("Redis Sentinel (master + replica, 3 sentinels)", new TopologyBackendFactory(), connection)
                    .settings(settings)
                    .fault(Fault.killHolder())
                    .fault(Fault.pauseHolder(settings.leaseTime().multipliedBy(2)))
                    .fault(Fault.of("failover", () -> failover(sentinel)))
                    .directory(Path.of("target", "fault-suite", "sentinel"))
                    .build().run();
            FaultGuarantees.assertHeld(report, FaultGuarantees.STORE_ERRORS);
        }
    }

    /** Kills the master, waits for the sentinels to promote the replica, and brings the old master back as its replica. */
    private static String failover(RedisSentinelSetup sentinel) {
        HostAndPort oldMaster = sentinel.currentMasterAddress();
        RedisServerProcess old = sentinel.nodeAt(oldMaster);
        long killedAt = System.nanoTime();
        old.kill();
        RedisServerProcess promoted = sentinel.awaitFailoverFrom(oldMaster, Duration.ofSeconds(30));
        long promotedAfter = Duration.ofNanos(System.nanoTime() - killedAt).toMillis();
        old.relaunch();
        try (Jedis admin = old.admin()) {
            admin.replicaof(promoted.host(), promoted.port());
        }
        return "SIGKILL of master " + oldMaster + "; " + promoted.uri() + " promoted after " + promotedAfter + " ms; old master back as replica";
    }

}
