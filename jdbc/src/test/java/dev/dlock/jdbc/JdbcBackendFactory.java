package dev.dlock.jdbc;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import dev.dlock.core.LockBackend;
import dev.dlock.testkit.BackendFactory;

/**
 * Connects a {@link JdbcLockBackend} with a pool of its own to {@code <jdbc url>|<user>|<password>}:
 * short pool and statement timeouts, so a dead database fails calls within seconds. The schema must exist.
 */
public class JdbcBackendFactory implements BackendFactory {

    private static final Map<LockBackend, HikariDataSource> POOLS = new ConcurrentHashMap<>();

    /** The connection string of {@code jdbcUrl} for {@link #create}. */
    static String connection(String jdbcUrl, String user, String password) {
        return jdbcUrl + "|" + user + "|" + password;
    }

    /** A pool over {@code connection} whose calls fail within about two seconds when the database is gone. */
    static HikariDataSource pool(String connection, int size) {
        String[] parts = connection.split("\\|", -1);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(parts[0]);
        config.setUsername(parts[1]);
        config.setPassword(parts[2]);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(2_000);
        config.setValidationTimeout(1_000);
        config.setInitializationFailTimeout(-1);
        return new HikariDataSource(config);
    }

    @Override
    public LockBackend create(String connection) {
        HikariDataSource pool = pool(connection, 12);
        JdbcLockBackend backend = JdbcLockBackend.builder(pool).queryTimeout(Duration.ofSeconds(2))
                .cleanupInterval(Duration.ZERO).build();
        POOLS.put(backend, pool);
        return backend;
    }

    @Override
    public void dispose(LockBackend backend) {
        backend.close();
        HikariDataSource pool = POOLS.remove(backend);
        if (pool != null) {
            pool.close();
        }
    }
}
