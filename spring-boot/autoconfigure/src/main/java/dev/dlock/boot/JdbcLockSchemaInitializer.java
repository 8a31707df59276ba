package dev.dlock.boot;

import java.sql.SQLException;
import java.util.Locale;

import javax.sql.DataSource;

import dev.dlock.core.LockBackendException;
import dev.dlock.jdbc.JdbcDialect;
import dev.dlock.jdbc.JdbcLockBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.sql.init.DatabaseInitializationMode;
import org.springframework.util.ClassUtils;

import static dev.dlock.boot.BuilderProperty.set;

/**
 * Creates dlock's lock table and its sequence (MySQL: its floor table) at startup when missing, as
 * {@code dlock.jdbc.initialize-schema} says: {@code embedded} (the default) only on an embedded database,
 * {@code always}, or {@code never}. A database initializer in Spring Boot's sense: it runs after Flyway's and
 * Liquibase's migrations (see {@link JdbcLockSchemaInitializerDetector}), and the JDBC store is built after it.
 * Instances starting at once on one database all succeed: their creations are serialized by a lock of the database.
 */
public class JdbcLockSchemaInitializer implements InitializingBean {

    private static final Logger log = LoggerFactory.getLogger(JdbcLockSchemaInitializer.class);
    /** Boot's test of an embedded database (spring-boot-jdbc on Boot 4) and the JdbcTemplate it runs on. */
    private static final boolean BOOT_JDBC_PRESENT =
            ClassUtils.isPresent("org.springframework.boot.jdbc.EmbeddedDatabaseConnection", JdbcLockSchemaInitializer.class.getClassLoader())
                    && ClassUtils.isPresent("org.springframework.jdbc.core.JdbcTemplate", JdbcLockSchemaInitializer.class.getClassLoader());

    private final DataSource dataSource;
    private final JdbcStoreProperties properties;

    /** An initializer of the lock table that {@code properties} name on {@code dataSource} (null: nothing to initialize). */
    public JdbcLockSchemaInitializer(DataSource dataSource, JdbcStoreProperties properties) {
        this.dataSource = dataSource;
        this.properties = properties;
    }

    /**
     * Creates what is missing when the mode asks for it; a failure stops the start, naming its cause. The table name
     * and timeout are checked first, so a bad value is reported before anything connects.
     */
    @Override
    public void afterPropertiesSet() {
        if (dataSource == null || properties.getInitializeSchema() == DatabaseInitializationMode.NEVER) {
            return;
        }
        String prefix = JdbcStoreProperties.PREFIX;
        JdbcLockBackend.Builder builder = JdbcLockBackend.builder(dataSource);
        set(prefix + ".table-name", () -> builder.tableName(properties.getTableName()));
        set(prefix + ".query-timeout", () -> builder.queryTimeout(properties.getQueryTimeout()));
        if (properties.getDialect() != null) {
            builder.dialect(properties.getDialect());
        }
        if (!shouldInitialize()) {
            return;
        }
        try {
            JdbcDialect dialect = builder.applySchema();
            log.info("dlock lock table {} ready ({}, {}.initialize-schema={})", properties.getTableName(), dialect, prefix, mode());
        } catch (LockBackendException e) {
            throw failure(e);
        }
    }

    /**
     * Whether this start creates the schema: always, or embedded on an embedded database, as Boot tells it (which
     * connects once); a configured server dialect is no embedded database, which keeps a start with
     * {@code dlock.jdbc.dialect} set free of connections.
     */
    boolean shouldInitialize() {
        DatabaseInitializationMode mode = properties.getInitializeSchema();
        if (dataSource == null || mode == DatabaseInitializationMode.NEVER) {
            return false;
        }
        if (mode == DatabaseInitializationMode.ALWAYS) {
            return true;
        }
        JdbcDialect dialect = properties.getDialect();
        return (dialect == null || dialect == JdbcDialect.H2) && BOOT_JDBC_PRESENT && Embedded.isEmbedded(dataSource);
    }

    /**
     * The start failure, naming what the database said: a database out of reach points to the DataSource's settings;
     * a refusal (a user that may not create tables, or anything else the DDL met) to the DDL to apply instead.
     */
    private DistributedLockStartupException failure(LockBackendException e) {
        String prefix = JdbcStoreProperties.PREFIX;
        String table = properties.getTableName();
        SQLException sql = JdbcLockStoreAutoConfiguration.sqlCause(e);
        String cause = JdbcLockStoreAutoConfiguration.rootMessage(e);
        String ddl = "create it with the DDL shipped in dlock-jdbc as dev/dlock/jdbc/schema-<dialect>.sql (with your "
                + "migrations) and set " + prefix + ".initialize-schema=never";
        if (sql == null || isConnectionFailure(sql)) {
            return new DistributedLockStartupException("dlock cannot reach the database of the application's DataSource "
                    + "to create its lock table " + table + ": " + cause, "Check the DataSource's settings "
                    + "(spring.datasource.url, username and password, or your DataSource bean).", e);
        }
        if (isPermissionDenied(sql)) {
            return new DistributedLockStartupException("The database user of the application's DataSource may not create "
                    + "dlock's lock table " + table + " (" + prefix + ".initialize-schema=" + mode() + "): " + cause,
                    "Grant that user the right to create a table and a sequence in its schema, or " + ddl + ".", e);
        }
        return new DistributedLockStartupException("The database refused to create dlock's lock table " + table + " ("
                + prefix + ".initialize-schema=" + mode() + "): " + cause, "Fix what the database names, or " + ddl + ".", e);
    }

    private String mode() {
        return properties.getInitializeSchema().name().toLowerCase(Locale.ROOT);
    }

    /**
     * SQLState class 08 (connection exception, which pools also use when no connection came in time) or 28 (invalid
     * authorization: a wrong user or password).
     */
    private static boolean isConnectionFailure(SQLException e) {
        return e.getSQLState() != null && (e.getSQLState().startsWith("08") || e.getSQLState().startsWith("28"));
    }

    /** PostgreSQL's insufficient_privilege (42501); MariaDB's and MySQL's "command denied" and "access denied" (1142, 1044). */
    private static boolean isPermissionDenied(SQLException e) {
        return "42501".equals(e.getSQLState()) || e.getErrorCode() == 1142 || e.getErrorCode() == 1044;
    }

    /** Boot's own test of an embedded database; its class is in spring-boot-jdbc on Boot 4, which may be absent. */
    private static final class Embedded {
        static boolean isEmbedded(DataSource dataSource) {
            return org.springframework.boot.jdbc.EmbeddedDatabaseConnection.isEmbedded(dataSource);
        }
    }
}
