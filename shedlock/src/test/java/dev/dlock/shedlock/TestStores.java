package dev.dlock.shedlock;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.JdbcBackendFactory;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.jdbc.PostgresServer;
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

    /** Starts a PostgreSQL server with dlock's table in it; {@link #connection(PostgresServer)} names it. */
    static PostgresServer startPostgres() {
        PostgresServer postgres = PostgresServer.start();
        try (HikariDataSource pool = new HikariDataSource()) {
            pool.setJdbcUrl(postgres.jdbcUrl());
            pool.setUsername("postgres");
            JdbcLockBackend.builder(pool).createSchema(true).build().close();
        }
        return postgres;
    }

    /** {@code postgres} as {@link JdbcBackendFactory}'s connection string: {@code url|user|password}. */
    static String connection(PostgresServer postgres) {
        return postgres.jdbcUrl() + "|postgres|";
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
