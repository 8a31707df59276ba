package dev.dlock.boot;

import java.sql.SQLException;

import javax.sql.DataSource;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.jdbc.JdbcLockBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;

import static dev.dlock.boot.BuilderProperty.set;
import static dev.dlock.boot.DistributedLockProperties.PREFIX;

/**
 * The JDBC lock store for {@code dlock.store=jdbc}, over the application's {@link DataSource}
 * (give the pool, not a transaction-aware proxy: lock statements never join the caller's
 * transaction). Runs after Boot's DataSource auto-configuration and before the store-neutral
 * {@link DistributedLockAutoConfiguration}, which builds the lock manager over it and, with
 * {@code dlock.verify-on-start}, has this configuration's check query the lock table once at startup.
 */
// Boot 4 and Boot 3.5 keep DataSourceAutoConfiguration in different packages; the line's own name is found, the other ignored.
@AutoConfiguration(before = DistributedLockAutoConfiguration.class,
        afterName = {"org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
                "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
@ConditionalOnClass({JdbcLockBackend.class, DataSource.class})
@ConditionalOnBooleanProperty(name = PREFIX + ".enabled", matchIfMissing = true)
@Conditional(StoreCondition.Jdbc.class)
@EnableConfigurationProperties({DistributedLockProperties.class, JdbcStoreProperties.class})
public class JdbcLockStoreAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(JdbcLockStoreAutoConfiguration.class);

    /** The JDBC store over the application's only (or primary) DataSource; the DataSource is not closed by it. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    public JdbcLockBackend dlockJdbcLockBackend(ObjectProvider<DataSource> dataSources, DistributedLockProperties properties,
                                                JdbcStoreProperties jdbc) {
        DataSource dataSource = dataSources.getIfUnique();
        if (dataSource == null) {
            throw new DistributedLockStartupException(PREFIX + ".store=jdbc needs one DataSource bean; found "
                    + dataSources.stream().count(), "Configure spring.datasource.* (with Spring Boot's JDBC starter), or "
                    + "define one DataSource bean (or mark one @Primary).", null);
        }
        JdbcLockBackend.Builder builder = JdbcLockBackend.builder(dataSource);
        String jdbcPrefix = JdbcStoreProperties.PREFIX;
        set(jdbcPrefix + ".table-name", () -> builder.tableName(jdbc.getTableName()));
        builder.createSchema(jdbc.isCreateSchema());
        if (jdbc.getDialect() != null) {
            builder.dialect(jdbc.getDialect());
        }
        set(jdbcPrefix + ".query-timeout", () -> builder.queryTimeout(jdbc.getQueryTimeout()));
        set(jdbcPrefix + ".idle-row-retention", () -> builder.idleRowRetention(jdbc.getIdleRowRetention()));
        set(jdbcPrefix + ".cleanup-interval", () -> builder.cleanupInterval(jdbc.getCleanupInterval()));
        set(PREFIX + ".watchdog.batch-size", () -> builder.renewalBatchSize(properties.getWatchdog().getBatchSize()));
        JdbcLockBackend backend;
        try {
            backend = builder.build();
        } catch (LockBackendException e) {
            throw new DistributedLockStartupException("dlock cannot prepare its lock table " + jdbc.getTableName()
                    + " on the application's DataSource: " + rootMessage(e), "Check the DataSource's settings "
                    + "(spring.datasource.url, username and password, or your DataSource bean)"
                    + (jdbc.getDialect() == null ? "; to start without connecting, set " + jdbcPrefix
                    + ".dialect (postgresql, mariadb or h2)" : "")
                    + (jdbc.isCreateSchema() ? "; " + jdbcPrefix + ".create-schema=true needs a database user that may "
                    + "create the table and its sequence" : "") + ".", e);
        }
        log.info("dlock locks in table {} ({})", backend.tableName(), backend.dialect());
        return backend;
    }

    /**
     * dlock.verify-on-start for the JDBC store: one query on the lock table. A missing (or unreadable) table
     * fails naming the shipped DDL and {@code dlock.jdbc.create-schema}; a database that cannot be reached,
     * the DataSource's settings.
     */
    @Bean
    StoreStartupCheck dlockJdbcStartupCheck() {
        return backend -> {
            if (!(backend instanceof JdbcLockBackend jdbc)) {
                return false;
            }
            StoreStartupCheck.ping(jdbc, e -> {
                SQLException sql = sqlCause(e);
                // SQLState class 42 (syntax error or access rule violation): the table is missing or not ours to read.
                if (sql != null && sql.getSQLState() != null && sql.getSQLState().startsWith("42")) {
                    return StoreStartupCheck.failed("dlock's lock table " + jdbc.tableName() + " is missing or cannot be read: "
                            + sql.getMessage(), "Create it with the DDL shipped in dlock-jdbc as "
                            + jdbc.dialect().schemaResource().substring(1) + " (with your migrations), or set "
                            + JdbcStoreProperties.PREFIX + ".create-schema=true to create it at startup; "
                            + JdbcStoreProperties.PREFIX + ".table-name names the table.", e);
                }
                return StoreStartupCheck.failed("dlock cannot reach the database of the application's DataSource: "
                        + rootMessage(e), "Check the DataSource's settings (spring.datasource.url, username and password, "
                        + "or your DataSource bean).", e);
            });
            return true;
        };
    }

    private static SQLException sqlCause(Throwable failure) {
        for (Throwable t = storeException(failure); t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                return sql;
            }
        }
        return null;
    }

    /** The driver's own words: the deepest cause's message of the driver's exception, without the store's wording around it. */
    private static String rootMessage(Throwable failure) {
        Throwable root = storeException(failure);
        while (root.getCause() != null) {
            root = root.getCause();
        }
        return root.getMessage();
    }

    /** The driver's exception behind a store failure (a dlock exception carries it aside, not as its cause), or the failure itself. */
    private static Throwable storeException(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof LockBackendException store && store.storeException() != null) {
                return store.storeException();
            }
        }
        return failure;
    }
}
