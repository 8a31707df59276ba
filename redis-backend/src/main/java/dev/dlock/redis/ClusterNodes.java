package dev.dlock.redis;

import java.util.Map;

import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;

/** The per-node connection pools of a Jedis cluster client, and what the nodes say about themselves. */
final class ClusterNodes {

    /** The first Redis major version with sharded pub/sub (SPUBLISH, SSUBSCRIBE). */
    static final int SHARDED_PUBSUB_MAJOR_VERSION = 7;

    private final UnifiedJedis client;

    private ClusterNodes(UnifiedJedis client) {
        this.client = client;
    }

    /** The nodes of {@code client} when it is a cluster client (RedisClusterClient, JedisCluster); null otherwise. */
    @SuppressWarnings("deprecation")
    static ClusterNodes of(UnifiedJedis client) {
        return client instanceof RedisClusterClient || client instanceof JedisCluster ? new ClusterNodes(client) : null;
    }

    /** The connection pool of every node the client knows, by "host:port"; a fresh copy. */
    @SuppressWarnings("deprecation")
    Map<String, ConnectionPool> pools() {
        if (client instanceof RedisClusterClient clusterClient) {
            return clusterClient.getClusterNodes();
        }
        return ((JedisCluster) client).getClusterNodes();
    }

    /**
     * Runs a harmless keyed read ({@code EXISTS}) on {@code key}'s slot through the cluster client, so
     * that the client follows the slot to its current owner: it refreshes its slot map when the old
     * owner redirects or is down, and only then holds a connection pool for a newly promoted master.
     */
    void followSlotOwner(String key) {
        try {
            client.exists(key);
        } catch (JedisException e) {
            // Still failing over; the next placement attempt asks again.
        }
    }

    /**
     * True when every node that answers {@code INFO server} runs Redis 7 or later; a node that is
     * down does not vote. Throws when no node answers.
     */
    boolean allSupportShardedPubSub() {
        int answered = 0;
        JedisException last = null;
        for (Map.Entry<String, ConnectionPool> node : pools().entrySet()) {
            String info;
            try (Jedis jedis = new Jedis(node.getValue().getResource())) {
                info = jedis.info("server");
            } catch (JedisException e) {
                last = e;
                continue;
            }
            answered++;
            if (majorVersion(info) < SHARDED_PUBSUB_MAJOR_VERSION) {
                return false;
            }
        }
        if (answered == 0) {
            throw last != null ? last : new JedisConnectionException("the cluster client knows no node");
        }
        return true;
    }

    /** The major version in an {@code INFO server} reply ({@code redis_version:7.0.15} gives 7); 0 when absent. */
    static int majorVersion(String info) {
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("redis_version:")) {
                String version = line.substring("redis_version:".length()).trim();
                int dot = version.indexOf('.');
                try {
                    return Integer.parseInt(dot < 0 ? version : version.substring(0, dot));
                } catch (NumberFormatException e) {
                    return 0;
                }
            }
        }
        return 0;
    }
}
