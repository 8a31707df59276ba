package dev.dlock.jedis8;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.BackendFactory;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;

import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Connects a {@link RedisLockBackend} over a Jedis 8 client with its default protocol (RESP3 where the
 * server speaks it): a {@link RedisClient} for {@code redis://host:port}, a {@link RedisClusterClient}
 * for {@code redis-cluster://h:p,h:p}.
 */
public class Jedis8BackendFactory implements BackendFactory {

    static final String CLUSTER = "redis-cluster";

    private static final Map<LockBackend, UnifiedJedis> CLIENTS = new ConcurrentHashMap<>();

    /** Short timeouts, so a dead node fails a call within seconds, as the contract suite expects. */
    static JedisClientConfig clientConfig() {
        return DefaultJedisClientConfig.builder().connectionTimeoutMillis(1000).socketTimeoutMillis(2000).build();
    }

    @Override
    public LockBackend create(String connection) {
        URI uri = URI.create(connection);
        UnifiedJedis client;
        if (CLUSTER.equals(uri.getScheme())) {
            Set<HostAndPort> seeds = new LinkedHashSet<>();
            for (String address : uri.getAuthority().split(",")) {
                seeds.add(HostAndPort.from(address));
            }
            client = RedisClusterClient.builder().nodes(seeds).clientConfig(clientConfig())
                    .maxAttempts(3).maxTotalRetriesDuration(Duration.ofSeconds(3)).build();
        } else {
            client = RedisClient.builder().hostAndPort(new HostAndPort(uri.getHost(), uri.getPort()))
                    .clientConfig(clientConfig()).build();
        }
        RedisLockBackend backend = RedisLockBackend.builder(client).build();
        CLIENTS.put(backend, client);
        return backend;
    }

    @Override
    public void dispose(LockBackend backend) {
        backend.close();
        UnifiedJedis client = CLIENTS.remove(backend);
        if (client != null) {
            client.close();
        }
    }
}
