package dev.dlock.redis;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.BackendFactory;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Connects a {@link RedisLockBackend} with its own pooled client to {@code redis://host:port}. */
public class RedisBackendFactory implements BackendFactory {

    private static final Map<LockBackend, UnifiedJedis> CLIENTS = new ConcurrentHashMap<>();

    @Override
    public LockBackend create(String connection) {
        URI uri = URI.create(connection);
        UnifiedJedis client = RedisClient.builder()
                .hostAndPort(new HostAndPort(uri.getHost(), uri.getPort()))
                .clientConfig(DefaultJedisClientConfig.builder().connectionTimeoutMillis(1000).socketTimeoutMillis(2000).build())
                .build();
        RedisLockBackend backend = configure(RedisLockBackend.builder(client)).build();
        CLIENTS.put(backend, client);
        return backend;
    }

    /** Settings of the backends this factory makes; none by default. */
    protected RedisLockBackend.Builder configure(RedisLockBackend.Builder builder) {
        return builder;
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
