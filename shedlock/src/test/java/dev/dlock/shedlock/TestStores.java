package dev.dlock.shedlock;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.JdbcBackendFactory;
import dev.dlock.redis.RedisLockBackend;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Backends of this module's tests, each with a client of its own: {@code redis://host:port}, or a
 * {@link JdbcBackendFactory} connection string ({@code <jdbc url>|<user>|<password>}).
 */
final class TestStores {

    private static final JdbcBackendFactory JDBC = new JdbcBackendFactory();
    private static final Map<LockBackend, UnifiedJedis> REDIS_CLIENTS = new ConcurrentHashMap<>();

    private TestStores() {
    }

    /** Connects a new backend to the store {@code connection} names. */
    static LockBackend connect(String connection) {
        if (!connection.startsWith("redis://")) {
            return JDBC.create(connection);
        }
        URI uri = URI.create(connection);
        UnifiedJedis client = RedisClient.builder().hostAndPort(new HostAndPort(uri.getHost(), uri.getPort()))
                .clientConfig(DefaultJedisClientConfig.builder().connectionTimeoutMillis(1000).socketTimeoutMillis(2000).build())
                .build();
        RedisLockBackend backend = RedisLockBackend.builder(client).build();
        REDIS_CLIENTS.put(backend, client);
        return backend;
    }

    /** Closes {@code backend} and the client {@link #connect} made for it. */
    static void dispose(LockBackend backend) {
        UnifiedJedis client = REDIS_CLIENTS.remove(backend);
        if (client == null) {
            JDBC.dispose(backend);
            return;
        }
        backend.close();
        client.close();
    }
}
