package dev.dlock.testkit.redis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * A Redis Cluster on loopback for tests: N masters sharing the 16384 slots evenly, optionally with
 * replicas, built with {@code CLUSTER ADDSLOTS}/{@code MEET}/{@code REPLICATE} over plain
 * connections, so no {@code redis-cli} is needed (the embedded 6.2 binary works too). A short
 * {@code cluster-node-timeout} makes a replica take over a killed master within seconds; a master
 * that is down does not stop the other slots ({@code cluster-require-full-coverage no}).
 */
public final class RedisClusterSetup implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RedisClusterSetup.class);

    private static final int SLOTS = 16384;
    private static final int NODE_TIMEOUT_MILLIS = 1_000;
    private static final Duration SETUP_TIMEOUT = Duration.ofSeconds(30);

    private final List<RedisServerProcess> masters = new ArrayList<>();
    private final List<RedisServerProcess> replicas = new ArrayList<>();

    private RedisClusterSetup() {
    }

    /** Starts {@code masterCount} masters with {@code replicasPerMaster} replicas each; returns when every node says {@code cluster_state:ok}. */
    public static RedisClusterSetup start(int masterCount, int replicasPerMaster) {
        return start(RedisBinaries.resolve(), masterCount, replicasPerMaster);
    }

    /** Like {@link #start(int, int)}, with the Redis 6.2 binary inside embedded-redis whatever is configured. */
    public static RedisClusterSetup startEmbedded(int masterCount, int replicasPerMaster) {
        return start(RedisBinaries.embedded(), masterCount, replicasPerMaster);
    }

    private static RedisClusterSetup start(Path binary, int masterCount, int replicasPerMaster) {
        if (masterCount < 1 || replicasPerMaster < 0) {
            throw new IllegalArgumentException("need at least one master and no negative replica count");
        }
        RedisClusterSetup setup = new RedisClusterSetup();
        try {
            List<String> options = List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", Integer.toString(NODE_TIMEOUT_MILLIS),
                    "--cluster-replica-validity-factor", "0",
                    "--cluster-require-full-coverage", "no");
            for (int i = 0; i < masterCount; i++) {
                setup.masters.add(RedisServerProcess.start(binary, options));
            }
            for (int i = 0; i < masterCount * replicasPerMaster; i++) {
                setup.replicas.add(RedisServerProcess.start(binary, options));
            }
            setup.assemble(replicasPerMaster);
            log.info("Cluster ready: masters {}, replicas {}", ports(setup.masters), ports(setup.replicas));
            return setup;
        } catch (RuntimeException | Error e) {
            setup.close();
            throw e;
        }
    }

    /** Every node's address, as seeds for a cluster client. */
    public Set<HostAndPort> seeds() {
        Set<HostAndPort> seeds = new LinkedHashSet<>();
        for (RedisServerProcess node : nodes()) {
            seeds.add(new HostAndPort(node.host(), node.port()));
        }
        return seeds;
    }

    /** Every node: masters first, then replicas (in start order; roles change after a failover). */
    public List<RedisServerProcess> nodes() {
        List<RedisServerProcess> all = new ArrayList<>(masters);
        all.addAll(replicas);
        return all;
    }

    /** The nodes started as masters. */
    public List<RedisServerProcess> initialMasters() {
        return List.copyOf(masters);
    }

    /** The running node that the cluster currently names master of {@code redisKey}'s slot. */
    public RedisServerProcess masterOf(String redisKey) {
        int slot = JedisClusterCRC16.getSlot(redisKey);
        Integer port = null;
        for (RedisServerProcess node : nodes()) {
            if (node.isRunning()) {
                port = ownerPort(node, slot);
                if (port != null) {
                    break;
                }
            }
        }
        if (port == null) {
            throw new IllegalStateException("No running node knows a live master of slot " + slot);
        }
        for (RedisServerProcess node : nodes()) {
            if (node.port() == port) {
                return node;
            }
        }
        throw new IllegalStateException("Slot " + slot + " is owned by unknown port " + port);
    }

    /** The running nodes that are masters now, by their own {@code INFO replication}. */
    public List<RedisServerProcess> currentMasters() {
        List<RedisServerProcess> current = new ArrayList<>();
        for (RedisServerProcess node : nodes()) {
            if (node.isRunning() && hasRole(node, "master")) {
                current.add(node);
            }
        }
        return current;
    }

    /**
     * Waits until a running node other than {@code deadMaster} owns {@code redisKey}'s slot, says
     * so itself, and every running node reports {@code cluster_state:ok}; returns the new owner.
     */
    public RedisServerProcess awaitPromotion(String redisKey, RedisServerProcess deadMaster, Duration timeout) {
        int slot = JedisClusterCRC16.getSlot(redisKey);
        RedisSentinelSetup.awaitTrue("a replica promoted for slot " + slot, timeout, () -> {
            for (RedisServerProcess node : nodes()) {
                if (!node.isRunning()) {
                    continue;
                }
                Integer owner = ownerPort(node, slot);
                if (owner == null || owner == deadMaster.port()) {
                    return false;
                }
            }
            return allRunningNodesOk();
        });
        return masterOf(redisKey);
    }

    /** Kills every node, like losing the whole store. */
    public void killAll() {
        nodes().forEach(RedisServerProcess::kill);
    }

    /** Starts every node again (empty, keeping its {@code nodes.conf}) and waits until the cluster is whole. */
    public void restartAll() {
        for (RedisServerProcess node : nodes()) {
            node.relaunch();
        }
        awaitWhole();
    }

    /** Stops every node. */
    @Override
    public void close() {
        nodes().forEach(RedisServerProcess::close);
    }

    private void assemble(int replicasPerMaster) {
        List<RedisServerProcess> all = nodes();
        for (int i = 0; i < masters.size(); i++) {
            int from = i * SLOTS / masters.size();
            int to = (i + 1) * SLOTS / masters.size();
            int[] slots = new int[to - from];
            for (int slot = from; slot < to; slot++) {
                slots[slot - from] = slot;
            }
            try (Jedis admin = masters.get(i).admin()) {
                admin.clusterAddSlots(slots);
            }
        }
        // Distinct config epochs, as redis-cli gives them, so no collision has to be resolved first.
        for (int i = 0; i < all.size(); i++) {
            try (Jedis admin = all.get(i).admin()) {
                admin.clusterSetConfigEpoch(i + 1);
            }
        }
        try (Jedis first = all.get(0).admin()) {
            for (RedisServerProcess node : all.subList(1, all.size())) {
                first.clusterMeet(node.host(), node.port());
            }
        }
        RedisSentinelSetup.awaitTrue("every node knows every other", SETUP_TIMEOUT,
                () -> all.stream().allMatch(node -> knownNodes(node) == all.size()));
        for (int r = 0; r < replicas.size(); r++) {
            RedisServerProcess master = masters.get(r / replicasPerMaster);
            String masterId;
            try (Jedis admin = master.admin()) {
                masterId = admin.clusterMyId();
            }
            try (Jedis admin = replicas.get(r).admin()) {
                admin.clusterReplicate(masterId);
            }
        }
        awaitWhole();
    }

    private void awaitWhole() {
        RedisSentinelSetup.awaitTrue("cluster_state:ok on every node with every replica linked", SETUP_TIMEOUT, () -> {
            if (!allRunningNodesOk()) {
                return false;
            }
            for (RedisServerProcess node : nodes()) {
                if (hasRole(node, "slave") && !replicationInfo(node).contains("master_link_status:up")) {
                    return false;
                }
            }
            return true;
        });
    }

    private boolean allRunningNodesOk() {
        for (RedisServerProcess node : nodes()) {
            if (!node.isRunning()) {
                continue;
            }
            try (Jedis admin = node.admin()) {
                if (!admin.clusterInfo().contains("cluster_state:ok")) {
                    return false;
                }
            } catch (JedisException e) {
                return false;
            }
        }
        return true;
    }

    private static int knownNodes(RedisServerProcess node) {
        try (Jedis admin = node.admin()) {
            int known = 0;
            for (String line : admin.clusterNodes().split("\n")) {
                if (!line.isBlank() && !line.contains("handshake")) {
                    known++;
                }
            }
            return known;
        } catch (JedisException e) {
            return -1;
        }
    }

    /** The port of the live master that {@code node} believes owns {@code slot}, or null. */
    private static Integer ownerPort(RedisServerProcess node, int slot) {
        String nodes;
        try (Jedis admin = node.admin()) {
            nodes = admin.clusterNodes();
        } catch (JedisException e) {
            return null;
        }
        for (String line : nodes.split("\n")) {
            String[] fields = line.trim().split(" ");
            if (fields.length < 9 || !fields[2].contains("master") || fields[2].contains("fail")) {
                continue;
            }
            for (int i = 8; i < fields.length; i++) {
                if (covers(fields[i], slot)) {
                    String address = fields[1].split("@")[0];
                    return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
                }
            }
        }
        return null;
    }

    private static boolean covers(String range, int slot) {
        if (range.startsWith("[")) {
            return false;
        }
        int dash = range.indexOf('-');
        if (dash < 0) {
            return Integer.parseInt(range) == slot;
        }
        return slot >= Integer.parseInt(range.substring(0, dash)) && slot <= Integer.parseInt(range.substring(dash + 1));
    }

    private static boolean hasRole(RedisServerProcess node, String role) {
        return replicationInfo(node).contains("role:" + role);
    }

    private static String replicationInfo(RedisServerProcess node) {
        try (Jedis admin = node.admin()) {
            return admin.info("replication");
        } catch (JedisException e) {
            return "";
        }
    }

    private static List<Integer> ports(List<RedisServerProcess> nodes) {
        return nodes.stream().map(RedisServerProcess::port).toList();
    }
}
