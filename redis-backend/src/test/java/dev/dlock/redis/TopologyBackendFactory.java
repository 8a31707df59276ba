package dev.dlock.redis;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.BackendFactory;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.RedisSentinelClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Connects a backend with its own clients to one of the topologies, named by a connection string
 * the contract suite also hands to its child JVM:
 * {@code redis-sentinel://h:p,h:p/masterName}, {@code redis-cluster://h:p,h:p} or {@code redlock://h:p,h:p,h:p}.
 */
public class TopologyBackendFactory implements BackendFactory {

    static final String SENTINEL = "redis-sentinel";
    static final String CLUSTER = "redis-cluster";
    static final String REDLOCK = "redlock";

    private static final Map<LockBackend, List<UnifiedJedis>> CLIENTS = new ConcurrentHashMap<>();

    /** Short timeouts, so a dead node fails a call within seconds, as the contract suite expects. */
    static JedisClientConfig clientConfig() {
        return DefaultJedisClientConfig.builder().connectionTimeoutMillis(1000).socketTimeoutMillis(2000).build();
    }

    /** {@code scheme://h:p,h:p[/path]} for the given addresses. */
    static String connection(String scheme, Set<HostAndPort> addresses, String path) {
        StringBuilder text = new StringBuilder(scheme).append("://");
        for (HostAndPort address : addresses) {
            if (text.charAt(text.length() - 1) != '/') {
                text.append(',');
            }
            text.append(address.getHost()).append(':').append(address.getPort());
        }
        return path == null ? text.toString() : text.append('/').append(path).toString();
    }

    /** A cluster client over {@code seeds} that gives up after a few quick attempts. */
    static RedisClusterClient clusterClient(Set<HostAndPort> seeds, int maxAttempts, Duration maxRetries) {
        return RedisClusterClient.builder()
                .nodes(seeds)
                .clientConfig(clientConfig())
                .maxAttempts(maxAttempts)
                .maxTotalRetriesDuration(maxRetries)
                .build();
    }

    /** A sentinel-backed client for {@code masterName}. */
    static RedisSentinelClient sentinelClient(Set<HostAndPort> sentinels, String masterName) {
        return RedisSentinelClient.builder()
                .masterName(masterName)
                .sentinels(sentinels)
                .clientConfig(clientConfig())
                .sentinelClientConfig(clientConfig())
                .build();
    }

    @Override
    public LockBackend create(String connection) {
        URI uri = URI.create(connection);
        Set<HostAndPort> addresses = new LinkedHashSet<>();
        for (String address : uri.getAuthority().split(",")) {
            addresses.add(HostAndPort.from(address));
        }
        List<UnifiedJedis> clients = new ArrayList<>();
        LockBackend backend;
        switch (uri.getScheme()) {
            case SENTINEL -> {
                UnifiedJedis client = sentinelClient(addresses, uri.getPath().substring(1));
                clients.add(client);
                backend = RedisLockBackend.builder(client).build();
            }
            case CLUSTER -> {
                UnifiedJedis client = clusterClient(addresses, 3, Duration.ofSeconds(3));
                clients.add(client);
                backend = RedisLockBackend.builder(client).build();
            }
            case REDLOCK -> {
                for (HostAndPort address : addresses) {
                    clients.add(RedisClient.builder().hostAndPort(address).clientConfig(clientConfig()).build());
                }
                backend = RedlockBackend.builder(clients).build();
            }
            default -> throw new IllegalArgumentException("Unknown topology in '" + connection + "'");
        }
        CLIENTS.put(backend, clients);
        return backend;
    }

    @Override
    public void dispose(LockBackend backend) {
        backend.close();
        List<UnifiedJedis> clients = CLIENTS.remove(backend);
        if (clients != null) {
            clients.forEach(UnifiedJedis::close);
        }
    }
}
