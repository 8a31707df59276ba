package dev.dlock.testkit.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * A Redis Sentinel deployment on loopback for tests: one master, one replica and three sentinels
 * (quorum 2) with a short {@code down-after-milliseconds}, so a killed master is replaced within
 * a few seconds. Every process is stopped by {@link #close()}, and by the JVM shutdown hook of
 * {@link RedisServerProcess} if a test never gets there.
 */
public final class RedisSentinelSetup implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RedisSentinelSetup.class);

    /** The name the sentinels monitor the master under. */
    public static final String MASTER_NAME = "dlock-master";

    private static final int SENTINELS = 3;
    private static final int DOWN_AFTER_MILLIS = 1_000;
    private static final int FAILOVER_TIMEOUT_MILLIS = 5_000;
    private static final Duration SETUP_TIMEOUT = Duration.ofSeconds(30);
    /** How long the nodes get after a restart to follow the sentinels' master by themselves before the roles are set. */
    private static final Duration RELINK_ATTEMPT = Duration.ofSeconds(5);

    private final List<RedisServerProcess> dataNodes = new ArrayList<>();
    private final List<RedisServerProcess> sentinels = new ArrayList<>();

    private RedisSentinelSetup() {
    }

    /** Starts master, replica and sentinels; returns once every sentinel sees the replica and the other two sentinels. */
    public static RedisSentinelSetup start() {
        RedisSentinelSetup setup = new RedisSentinelSetup();
        try {
            // No 5 s wait before a diskless full sync: every restart of the data nodes resyncs the replica.
            RedisServerProcess master = RedisServerProcess.start(List.of("--repl-diskless-sync-delay", "0"));
            setup.dataNodes.add(master);
            RedisServerProcess replica = RedisServerProcess.start(List.of("--repl-diskless-sync-delay", "0",
                    "--replicaof", master.host(), Integer.toString(master.port())));
            setup.dataNodes.add(replica);
            setup.awaitReplicaLinked(replica);
            String config = "sentinel monitor " + MASTER_NAME + " " + master.host() + " " + master.port() + " 2\n"
                    + "sentinel down-after-milliseconds " + MASTER_NAME + " " + DOWN_AFTER_MILLIS + "\n"
                    + "sentinel failover-timeout " + MASTER_NAME + " " + FAILOVER_TIMEOUT_MILLIS + "\n"
                    + "sentinel parallel-syncs " + MASTER_NAME + " 1\n";
            for (int i = 0; i < SENTINELS; i++) {
                setup.sentinels.add(RedisServerProcess.startSentinel(config));
            }
            setup.awaitSentinelsAgree();
            log.info("Sentinel setup ready: master {}, replica {}, sentinels {}", master.uri(), replica.uri(),
                    setup.sentinelAddresses());
            return setup;
        } catch (RuntimeException | Error e) {
            setup.close();
            throw e;
        }
    }

    /** The sentinels' addresses, for a sentinel-backed client. */
    public Set<HostAndPort> sentinelAddresses() {
        Set<HostAndPort> addresses = new LinkedHashSet<>();
        for (RedisServerProcess sentinel : sentinels) {
            addresses.add(new HostAndPort(sentinel.host(), sentinel.port()));
        }
        return addresses;
    }

    /** The data nodes (master and replica, in start order; roles change after a failover). */
    public List<RedisServerProcess> dataNodes() {
        return List.copyOf(dataNodes);
    }

    /** The sentinel processes. */
    public List<RedisServerProcess> sentinels() {
        return List.copyOf(sentinels);
    }

    /** The master address the first answering sentinel reports. */
    public HostAndPort currentMasterAddress() {
        JedisException last = null;
        for (RedisServerProcess sentinel : sentinels) {
            if (!sentinel.isRunning()) {
                continue;
            }
            try (Jedis admin = sentinel.admin()) {
                List<String> address = admin.sentinelGetMasterAddrByName(MASTER_NAME);
                return new HostAndPort(address.get(0), Integer.parseInt(address.get(1)));
            } catch (JedisException e) {
                last = e;
            }
        }
        throw new IllegalStateException("No sentinel answered get-master-addr-by-name", last);
    }

    /** The data node the sentinels currently call master. */
    public RedisServerProcess currentMaster() {
        return nodeAt(currentMasterAddress());
    }

    /** The data node listening on {@code address}. */
    public RedisServerProcess nodeAt(HostAndPort address) {
        for (RedisServerProcess node : dataNodes) {
            if (node.port() == address.getPort()) {
                return node;
            }
        }
        throw new IllegalStateException("No data node at " + address);
    }

    /**
     * Waits until every running sentinel names a master other than {@code oldMaster} and that node
     * answers {@code ROLE} as master; returns the new master.
     */
    public RedisServerProcess awaitFailoverFrom(HostAndPort oldMaster, Duration timeout) {
        awaitTrue("failover away from " + oldMaster, timeout, () -> {
            for (RedisServerProcess sentinel : sentinels) {
                try (Jedis admin = sentinel.admin()) {
                    List<String> address = admin.sentinelGetMasterAddrByName(MASTER_NAME);
                    if (Integer.parseInt(address.get(1)) == oldMaster.getPort()) {
                        return false;
                    }
                } catch (JedisException e) {
                    return false;
                }
            }
            return isMaster(currentMaster());
        });
        return currentMaster();
    }

    /** Kills both data nodes, like losing the whole store; sentinels keep running. */
    public void killDataNodes() {
        dataNodes.forEach(RedisServerProcess::kill);
    }

    /**
     * Starts both data nodes again, empty, and returns once the deployment is settled: every sentinel names the same
     * master and flags it as nothing but a master (no {@code s_down}, {@code o_down}, {@code disconnected} or failover in
     * progress), that node answers as master, and the other node is its linked replica. A crash of a second or more
     * leaves the sentinels counting the master down for a while after it is back, and a failover they start then
     * promotes the freshly started replica in the middle of the next test; so the sentinels' word decides which node is
     * master, and the roles are set to match it when the nodes do not follow by themselves.
     */
    public void restartDataNodes() {
        for (RedisServerProcess node : dataNodes) {
            node.relaunch();
        }
        long restarted = System.nanoTime();
        long deadline = restarted + SETUP_TIMEOUT.toNanos();
        long nextRoleFix = restarted + RELINK_ATTEMPT.toNanos();
        while (true) {
            String unsettled = unsettledReason(restarted);
            if (unsettled == null) {
                return;
            }
            long now = System.nanoTime();
            if (now > deadline) {
                throw new IllegalStateException("Timed out after " + SETUP_TIMEOUT.toMillis() + " ms waiting for the sentinel"
                        + " deployment to settle after a restart of its data nodes: " + unsettled);
            }
            if (now > nextRoleFix) {
                nextRoleFix = now + RELINK_ATTEMPT.toNanos();
                setRolesToTheSentinelsMaster(unsettled);
            }
            RedisServerProcess.sleep(Duration.ofMillis(20));
        }
    }

    /**
     * Null when the deployment is settled (see {@link #restartDataNodes()}), else what is not, for the log. A sentinel
     * counts only once the master answered its {@code PING} since the restart at {@code restartedNanos}: until then it
     * may still flag the master down.
     */
    private String unsettledReason(long restartedNanos) {
        HostAndPort agreed = null;
        for (RedisServerProcess sentinel : sentinels) {
            try (Jedis admin = sentinel.admin()) {
                Map<String, String> master = admin.sentinelMaster(MASTER_NAME);
                if (!"master".equals(master.get("flags"))) {
                    return "sentinel " + sentinel.port() + " flags the master " + master.get("flags");
                }
                long sinceRestartMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restartedNanos);
                if (Long.parseLong(master.get("last-ok-ping-reply")) >= sinceRestartMillis) {
                    return "sentinel " + sentinel.port() + " has had no PING answered since the restart";
                }
                HostAndPort address = new HostAndPort(master.get("ip"), Integer.parseInt(master.get("port")));
                if (agreed != null && !agreed.equals(address)) {
                    return "the sentinels name different masters, " + agreed + " and " + address;
                }
                agreed = address;
            } catch (JedisException e) {
                return "sentinel " + sentinel.port() + " unreachable: " + e.getMessage();
            }
        }
        RedisServerProcess master = nodeAt(agreed);
        String masterInfo = replicationInfo(master);
        if (!masterInfo.contains("role:master")) {
            return "the sentinels' master " + master.uri() + " answers " + masterInfo;
        }
        for (RedisServerProcess node : dataNodes) {
            String info = replicationInfo(node);
            if (node != master && !(replicates(info, master) && info.contains("master_link_status:up"))) {
                return "replica " + node.uri() + " not linked to " + master.uri() + ": " + info;
            }
        }
        return null;
    }

    private void setRolesToTheSentinelsMaster(String unsettled) {
        RedisServerProcess master;
        try {
            master = currentMaster();
        } catch (IllegalStateException e) {
            return;
        }
        log.info("Sentinel deployment not settled after a restart ({}); making {} master and the other node its replica",
                unsettled, master.uri());
        for (RedisServerProcess node : dataNodes) {
            try (Jedis admin = node.admin()) {
                if (node == master) {
                    if (!isMaster(node)) {
                        admin.replicaofNoOne();
                    }
                } else if (!replicates(replicationInfo(node), master)) {
                    admin.replicaof(master.host(), master.port());
                }
            } catch (JedisException e) {
                log.info("Could not set the role of {} yet: {}", node.uri(), e.toString());
            }
        }
    }

    /** Whether {@code replicationInfo} (of {@link #replicationInfo}) names {@code master} as the node's master. */
    private static boolean replicates(String replicationInfo, RedisServerProcess master) {
        return replicationInfo.contains("master_port:" + master.port() + " ");
    }

    private static String replicationInfo(RedisServerProcess node) {
        try (Jedis admin = node.admin()) {
            return admin.info("replication").replace("\r\n", " ").trim();
        } catch (JedisException e) {
            return "unreachable: " + e.getMessage();
        }
    }

    /** Stops every process. */
    @Override
    public void close() {
        for (RedisServerProcess sentinel : sentinels) {
            sentinel.close();
        }
        for (RedisServerProcess node : dataNodes) {
            node.close();
        }
    }

    private void awaitReplicaLinked(RedisServerProcess replica) {
        awaitTrue("replica " + replica.uri() + " linked to its master", SETUP_TIMEOUT, () -> {
            try (Jedis admin = replica.admin()) {
                return admin.info("replication").contains("master_link_status:up");
            } catch (JedisException e) {
                return false;
            }
        });
    }

    private void awaitSentinelsAgree() {
        awaitTrue("sentinels see the replica and each other", SETUP_TIMEOUT, () -> {
            for (RedisServerProcess sentinel : sentinels) {
                try (Jedis admin = sentinel.admin()) {
                    Map<String, String> master = admin.sentinelMaster(MASTER_NAME);
                    if (!"1".equals(master.get("num-slaves"))
                            || !Integer.toString(SENTINELS - 1).equals(master.get("num-other-sentinels"))) {
                        return false;
                    }
                } catch (JedisException e) {
                    return false;
                }
            }
            return true;
        });
    }

    private static boolean isMaster(RedisServerProcess node) {
        try (Jedis admin = node.admin()) {
            return admin.info("replication").contains("role:master");
        } catch (JedisException e) {
            return false;
        }
    }

    static void awaitTrue(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("Timed out after " + timeout.toMillis() + " ms waiting for: " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while waiting for: " + what, e);
            }
        }
    }
}
