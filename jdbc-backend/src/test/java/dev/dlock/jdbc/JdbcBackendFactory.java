package dev.dlock.jdbc;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.BackendFactory;

/**
 * Connects a {@link JdbcLockBackend} with a pool of its own to {@code <jdbc url>|<user>|<password>[|<dialect>]}:
 * short pool and statement timeouts, so a dead database fails calls within seconds. The schema must exist.
 * A dialect, when given, is forced instead of detected (the child JVM of the contract suite gets it too).
 */
public class JdbcBackendFactory implements BackendFactory {

    private static final Map<LockBackend, HikariDataSource> POOLS = new ConcurrentHashMap<>();

    /** The connection string of {@code jdbcUrl} for {@link #create}. */
    static String connection(String jdbcUrl, String user, String password) {
        return jdbcUrl + "|" + user + "|" + password;
    }

    /** The connection string of {@code jdbcUrl} for {@link #create}, forcing {@code dialect} (for example {@code mysql}). */
    static String connection(String jdbcUrl, String user, String password, String dialect) {
        return connection(jdbcUrl, user, password) + "|" + dialect;
    }

    /** A backend builder over {@code pool} with the dialect {@code connection} forces, if any. */
    static JdbcLockBackend.Builder builder(String connection, DataSource pool) {
        String[] parts = connection.split("\\|", -1);
        JdbcLockBackend.Builder builder = JdbcLockBackend.builder(pool);
        if (parts.length > 3) {
            builder.dialect(JdbcDialect.valueOf(parts[3].toUpperCase(Locale.ROOT)));
        }
        return builder;
    }

    /** Creates the lock table (and whatever the dialect's tokens need) through the backend's own createSchema. */
    static void createSchema(String connection) {
        try (HikariDataSource pool = pool(connection, 1)) {
            builder(connection, pool).createSchema(true).build().close();
        }
    }

    /**
     * A pool over {@code connection} whose calls fail within about five seconds when the database is gone: a new
     * connection took over 2 s beside another build (the contract's dead-store bound is 15 s).
     */
    static HikariDataSource pool(String connection, int size) {
        String[] parts = connection.split("\\|", -1);
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(parts[0]);
        config.setUsername(parts[1]);
        config.setPassword(parts[2]);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(0);
        config.setConnectionTimeout(5_000);
        config.setValidationTimeout(1_000);
        config.setInitializationFailTimeout(-1);
        return new HikariDataSource(config);
    }

    @Override
    public LockBackend create(String connection) {
        HikariDataSource pool = pool(connection, 12);
        JdbcLockBackend backend = builder(connection, pool).queryTimeout(Duration.ofSeconds(2))
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
