package dev.dlock.boot;

import java.time.Duration;

import dev.dlock.jdbc.JdbcDialect;
import dev.dlock.jdbc.JdbcLockBackend;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.DeprecatedConfigurationProperty;
import org.springframework.boot.sql.init.DatabaseInitializationMode;

/**
 * The {@code dlock.jdbc.*} settings of the JDBC lock store ({@code dlock.store=jdbc}); plain values,
 * the rules live in {@link JdbcLockBackend.Builder}.
 */
@ConfigurationProperties(JdbcStoreProperties.PREFIX)
public class JdbcStoreProperties {

    /** The prefix of the JDBC store's properties. */
    public static final String PREFIX = DistributedLockProperties.PREFIX + ".jdbc";

    /** The lock table, optionally schema.table; its sequence is the table name plus _token_seq (MySQL: its floor table, plus _token_floor). */
    private String tableName = JdbcLockBackend.DEFAULT_TABLE_NAME;

    /**
     * When the sequence (MySQL: the floor table) and the lock table are created at startup if missing, after Flyway and
     * Liquibase: embedded (only on an embedded database such as in-memory H2), always, or never (apply the shipped DDL
     * with your migrations).
     */
    private DatabaseInitializationMode initializeSchema;

    /** Whether the schema is created at startup; deprecated: use initialize-schema (true: always, false: never). */
    private Boolean createSchema;

    /**
     * The database's dialect (postgresql, mariadb, mysql, h2); detected from the connection when not set; mysql forces
     * the token path without a sequence, also on MariaDB.
     */
    private JdbcDialect dialect;

    /** The timeout of every lock statement (whole seconds, 1s to 30s). */
    private Duration queryTimeout = JdbcLockBackend.DEFAULT_QUERY_TIMEOUT;

    /** How long a free row is kept before cleanup may delete it (at least 1m). */
    private Duration idleRowRetention = JdbcLockBackend.DEFAULT_IDLE_ROW_RETENTION;

    /** How often idle rows are cleaned up; 0 turns the background cleanup off. */
    private Duration cleanupInterval = JdbcLockBackend.DEFAULT_CLEANUP_INTERVAL;

    /** The lock table's name. */
    public String getTableName() {
        return tableName;
    }

    /** Sets the lock table's name. */
    public void setTableName(String tableName) {
        this.tableName = tableName;
    }

    /**
     * When the schema is created at startup: {@code initialize-schema} when set, else the deprecated
     * {@code create-schema} (true: always, false: never), else embedded.
     */
    public DatabaseInitializationMode getInitializeSchema() {
        if (initializeSchema != null) {
            return initializeSchema;
        }
        if (createSchema != null) {
            return createSchema ? DatabaseInitializationMode.ALWAYS : DatabaseInitializationMode.NEVER;
        }
        return DatabaseInitializationMode.EMBEDDED;
    }

    /** Sets when the schema is created at startup. */
    public void setInitializeSchema(DatabaseInitializationMode initializeSchema) {
        this.initializeSchema = initializeSchema;
    }

    /** The deprecated switch, or null when not set; replaced by {@code dlock.jdbc.initialize-schema}. */
    @Deprecated(since = "0.1.0", forRemoval = true)
    @DeprecatedConfigurationProperty(replacement = "dlock.jdbc.initialize-schema", since = "0.1.0",
            reason = "Spring Boot's initialize-schema convention: always for true, never for false")
    public Boolean getCreateSchema() {
        return createSchema;
    }

    /** Sets the deprecated switch; {@code dlock.jdbc.initialize-schema} wins when both are set. */
    @Deprecated(since = "0.1.0", forRemoval = true)
    public void setCreateSchema(Boolean createSchema) {
        this.createSchema = createSchema;
    }

    /** The configured dialect, or null to detect it. */
    public JdbcDialect getDialect() {
        return dialect;
    }

    /** Overrides the detected dialect. */
    public void setDialect(JdbcDialect dialect) {
        this.dialect = dialect;
    }

    /** The statement timeout. */
    public Duration getQueryTimeout() {
        return queryTimeout;
    }

    /** Sets the statement timeout. */
    public void setQueryTimeout(Duration queryTimeout) {
        this.queryTimeout = queryTimeout;
    }

    /** How long free rows are kept. */
    public Duration getIdleRowRetention() {
        return idleRowRetention;
    }

    /** Sets how long free rows are kept. */
    public void setIdleRowRetention(Duration idleRowRetention) {
        this.idleRowRetention = idleRowRetention;
    }

    /** How often idle rows are cleaned up. */
    public Duration getCleanupInterval() {
        return cleanupInterval;
    }

    /** Sets how often idle rows are cleaned up. */
    public void setCleanupInterval(Duration cleanupInterval) {
        this.cleanupInterval = cleanupInterval;
    }
}
