package dev.dlock.redis;

import java.lang.reflect.Field;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.providers.ClusterConnectionProvider;

/**
 * The per-node connection pools of a Jedis cluster client, its slot cache, and what the nodes say
 * about themselves.
 */
final class ClusterNodes {

    private static final Logger log = LoggerFactory.getLogger(ClusterNodes.class);

    /** The first Redis major version with sharded pub/sub (SPUBLISH, SSUBSCRIBE). */
    static final int SHARDED_PUBSUB_MAJOR_VERSION = 7;

    /** Jedis keeps a cluster client's slot cache behind this protected field and offers no getter. */
    private static final Field PROVIDER_FIELD = providerField();

    private final UnifiedJedis client;
    /** The client's slot cache and node connections; null when this Jedis version hides it. */
    private final ClusterConnectionProvider provider;

    private ClusterNodes(UnifiedJedis client) {
        this.client = client;
        this.provider = providerOf(client);
    }

    /** The nodes of {@code client} when it is a cluster client (RedisClusterClient, JedisCluster); null otherwise. */
    static ClusterNodes of(UnifiedJedis client) {
        return JedisGeneration.isClusterClient(client) ? new ClusterNodes(client) : null;
    }

    /** The connection pool of every node the client knows, by "host:port"; a fresh copy. */
    Map<String, ConnectionPool> pools() {
        return JedisGeneration.clusterNodes(client);
    }

    /** True when the client's slot cache can be read, so that keys can be grouped by the node owning them. */
    boolean knowsSlotOwners() {
        return provider != null;
    }

    /** The master the client's slot cache names for {@code slot}; null when unknown (or the cache is out of reach). */
    HostAndPort slotOwner(int slot) {
        return provider == null ? null : provider.getNode(slot);
    }

    /** A pooled connection to {@code node}; closing it returns it to the pool. Needs {@link #knowsSlotOwners()}. */
    Connection connection(HostAndPort node) {
        return provider.getConnection(node);
    }

    /** Reads the slot map again from the cluster, as the client does after a connection error or redirect. */
    void refreshSlotOwners() {
        if (provider != null) {
            provider.renewSlotCache();
        }
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

    private static ClusterConnectionProvider providerOf(UnifiedJedis client) {
        if (PROVIDER_FIELD != null) {
            try {
                if (PROVIDER_FIELD.get(client) instanceof ClusterConnectionProvider clusterProvider) {
                    return clusterProvider;
                }
            } catch (IllegalAccessException | RuntimeException e) {
                log.debug("Cannot read the cluster client's slot cache: {}", e.toString());
            }
        }
        log.info("The cluster client's slot cache is out of reach (Jedis {}): leases are renewed per slot, "
                + "not per node", UnifiedJedis.class.getPackage().getImplementationVersion());
        return null;
    }

    private static Field providerField() {
        try {
            Field field = UnifiedJedis.class.getDeclaredField("provider");
            field.setAccessible(true);
            return field;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
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
