package dev.dlock.boottests;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.BackendFactory;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.UnifiedJedis;

import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Connects a {@link RedisLockBackend} over a Jedis 6 {@link JedisPooled} client to {@code redis://host:port}. */
public class Jedis6BackendFactory implements BackendFactory {

    private static final Map<LockBackend, UnifiedJedis> CLIENTS = new ConcurrentHashMap<>();

    @Override
    public LockBackend create(String connection) {
        URI uri = URI.create(connection);
        UnifiedJedis client = new JedisPooled(new HostAndPort(uri.getHost(), uri.getPort()),
                DefaultJedisClientConfig.builder().connectionTimeoutMillis(1000).socketTimeoutMillis(2000).build());
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
