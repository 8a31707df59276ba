package dev.dlock.zookeeper;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.dlock.testkit.faults.Fault;
import dev.dlock.testkit.faults.FaultGuarantees;
import dev.dlock.testkit.faults.FaultReport;
import dev.dlock.testkit.faults.FaultSuite;

/**
 * The fault suite's short mode on the ZooKeeper store, over a three-server ensemble in this JVM: 4 worker
 * JVMs × 8 threads, each with its own session, write to the fencing referee while holders are killed, a
 * holder is paused past its session timeout (the server expires the session and deletes its nodes, so the
 * paused holder must be told its lease is lost), and the ensemble's leader is killed and started again.
 */
@Tag("fault-suite")
class ZooKeeperFaultSuiteTest {

    private static final Duration SESSION = Duration.ofMillis(ZooKeeperBackendFactory.SESSION_TIMEOUT_MILLIS);
    /** Past the session timeout: the paused holder's session expires while it is stopped. */
    private static final Duration PAUSE = SESSION.plusSeconds(3);

    /**
     * The short mode with the session as the lease, since a killed holder's key comes free only when its
     * session expires (the run leaves three of them after the last fault, and waits two for the keys at the
     * end); and faults 8 s apart, since every new leader gives every session a fresh timeout, so leader
     * kills closer together than the session timeout would keep a killed holder's session alive.
     */
    private static FaultSuite.Settings settings() {
        FaultSuite.Settings base = FaultSuite.Settings.shortMode();
        return new FaultSuite.Settings(Duration.ofSeconds(60), base.jvms(), base.threadsPerJvm(), base.hotKeys(), base.coldKeys(),
                SESSION, base.maxHoldMillis(), Duration.ofSeconds(8), base.seed()).fromSystemProperties();
    }

    @Test
    void ensembleUnderKillsSessionExpiringPausesAndLeaderKills() throws Exception {
        ZooKeeperTestServer.applyServerSettings();
        try (TestingCluster ensemble = ZooKeeperTestServer.ensemble(3)) {
            ensemble.start();
            FaultSuite.Settings settings = settings();
            FaultReport report = FaultSuite.builder("ZooKeeper (ensemble of 3)", new ZooKeeperBackendFactory(), ensemble.getConnectString())
                    .settings(settings)
                    .fault(Fault.killHolder())
                    .fault(Fault.pauseHolder(PAUSE))
                    .fault(Fault.of("kill-leader", () -> killLeader(ensemble)))
                    .directory(Path.of("target", "fault-suite", "zookeeper"))
                    .build().run();
            FaultGuarantees.assertHeld(report, FaultGuarantees.STORE_ERRORS);
        }
    }

    /** Kills the leader, waits for the other two to elect a new one, and starts the old one again as a follower. */
    private static String killLeader(TestingCluster ensemble) throws Exception {
        InstanceSpec leader = awaitLeader(ensemble, null);
        long killedAt = System.nanoTime();
        if (!ensemble.killServer(leader)) {
            throw new IllegalStateException("could not kill leader " + leader.getPort());
        }
        InstanceSpec next = awaitLeader(ensemble, leader);
        long electedAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
        if (!ensemble.restartServer(leader)) {
            throw new IllegalStateException("could not restart server " + leader.getPort());
        }
        awaitMode(leader, "follower");
        return "kill of leader " + leader.getPort() + "; " + next.getPort() + " elected after " + electedAfter
                + " ms; old leader back as follower";
    }

    /** The server that says it leads, other than {@code except}; waits up to 30 s for one. */
    private static InstanceSpec awaitLeader(TestingCluster ensemble, InstanceSpec except) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() - deadline < 0) {
            for (InstanceSpec spec : ensemble.getInstances()) {
                if (!spec.equals(except) && "leader".equals(modeOf(spec))) {
                    return spec;
                }
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("no leader in " + ensemble.getConnectString() + " within 30 s");
    }

    private static void awaitMode(InstanceSpec spec, String mode) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!mode.equals(modeOf(spec))) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("server " + spec.getPort() + " not " + mode + " within 30 s");
            }
            Thread.sleep(50);
        }
    }

    /** The server's own {@code Mode:} answer, or null while it does not answer. */
    private static String modeOf(InstanceSpec spec) {
        try {
            return ZooKeeperTestServer.srvr(spec.getPort(), "Mode:");
        } catch (RuntimeException e) {
            return null;
        }
    }
}
