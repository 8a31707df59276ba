package dev.dlock.boot;

import java.sql.SQLException;

import javax.sql.DataSource;

import dev.dlock.boot.DistributedLockProperties.Store;
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
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

import static dev.dlock.boot.BuilderProperty.set;
import static dev.dlock.boot.DistributedLockProperties.PREFIX;

/**
 * The JDBC lock store for {@code dlock.store=jdbc}, over the application's {@link DataSource}
 * (give the pool, not a transaction-aware proxy: lock statements never join the caller's
 * transaction). Runs after Boot's DataSource auto-configuration and before the store-neutral
 * {@link DistributedLockAutoConfiguration}, which builds the lock manager over it and, with
 * {@code dlock.verify-on-start}, has this configuration's check query the lock table once at startup.
 * The store depends on database initialization in Boot's sense: it is built after Flyway, Liquibase and dlock's
 * own {@link JdbcLockSchemaInitializer} ({@code dlock.jdbc.initialize-schema}) have run.
 */
// Boot 4 and Boot 3.5 keep DataSourceAutoConfiguration in different packages; the line's own name is found, the other ignored.
@AutoConfiguration(before = DistributedLockAutoConfiguration.class,
        afterName = {"org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
                "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
@ConditionalOnClass({JdbcLockBackend.class, DataSource.class})
@ConditionalOnBooleanProperty(name = PREFIX + ".enabled", matchIfMissing = true)
@ConditionalOnLockStore(Store.JDBC)
@EnableConfigurationProperties({DistributedLockProperties.class, JdbcStoreProperties.class})
@Import(DatabaseInitializationDependencyConfigurer.class)
public class JdbcLockStoreAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(JdbcLockStoreAutoConfiguration.class);

    /**
     * Creates the lock table at startup as {@code dlock.jdbc.initialize-schema} says (embedded, always, never), after
     * Flyway and Liquibase; nothing when there is no single DataSource (the store reports that). Not made when the
     * application defines its own store, whose table these settings do not describe.
     */
    @Bean
    @ConditionalOnMissingBean({JdbcLockSchemaInitializer.class, LockBackend.class})
    public JdbcLockSchemaInitializer dlockJdbcLockSchemaInitializer(ObjectProvider<DataSource> dataSources,
                                                                    JdbcStoreProperties jdbc) {
        warnIfDeprecatedCreateSchema(jdbc);
        return new JdbcLockSchemaInitializer(dataSources.getIfUnique(), jdbc);
    }

    @SuppressWarnings("removal")
    private static void warnIfDeprecatedCreateSchema(JdbcStoreProperties jdbc) {
        if (jdbc.getCreateSchema() != null) {
            log.warn("{}.create-schema is deprecated; use {}.initialize-schema={} (embedded, always or never)",
                    JdbcStoreProperties.PREFIX, JdbcStoreProperties.PREFIX, jdbc.getCreateSchema() ? "always" : "never");
        }
    }

    /** The JDBC store over the application's only (or primary) DataSource; the DataSource is not closed by it. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    @DependsOnDatabaseInitialization
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
            // Only the dialect's detection connects here: the schema is the initializer's.
            throw new DistributedLockStartupException("dlock cannot connect to the application's DataSource to detect "
                    + "the database of its lock table " + jdbc.getTableName() + ": " + rootMessage(e), "Check the "
                    + "DataSource's settings (spring.datasource.url, username and password, or your DataSource bean); to "
                    + "start without connecting, set " + jdbcPrefix + ".dialect (postgresql, mariadb, mysql or h2).", e);
        }
        log.info("dlock locks in table {} ({})", backend.tableName(), backend.dialect());
        PoolTimeoutCheck.warnIfLonger(dataSource, jdbc.getQueryTimeout());
        return backend;
    }

    /**
     * dlock.verify-on-start for the JDBC store: one query on the lock table. A missing (or unreadable) table
     * fails naming the shipped DDL and {@code dlock.jdbc.initialize-schema}; a database that cannot be reached,
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
                            + JdbcStoreProperties.PREFIX + ".initialize-schema=always to create it at startup; "
                            + JdbcStoreProperties.PREFIX + ".table-name names the table.", e);
                }
                return StoreStartupCheck.failed("dlock cannot reach the database of the application's DataSource: "
                        + rootMessage(e), "Check the DataSource's settings (spring.datasource.url, username and password, "
                        + "or your DataSource bean).", e);
            });
            return true;
        };
    }

    /** The driver's SQLException behind {@code failure}, or null. */
    static SQLException sqlCause(Throwable failure) {
        for (Throwable t = storeException(failure); t != null; t = t.getCause()) {
            if (t instanceof SQLException sql) {
                return sql;
            }
        }
        return null;
    }

    /** The driver's own words: the deepest cause's message of the driver's exception, without the store's wording around it. */
    static String rootMessage(Throwable failure) {
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
