package dev.dlock.boot;

import java.time.Duration;

import dev.dlock.jdbc.JdbcDialect;
import dev.dlock.jdbc.JdbcLockBackend;
import org.springframework.boot.context.properties.ConfigurationProperties;

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

    /** Whether the sequence (MySQL: the floor table) and the lock table are created at startup when missing (off: apply the shipped DDL with your migrations). */
    private boolean createSchema;

    /** The database's dialect (postgresql, mariadb, mysql, h2); detected from the connection when not set; mysql forces the token path without a sequence, also on MariaDB. */
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

    /** Whether the schema is created at startup. */
    public boolean isCreateSchema() {
        return createSchema;
    }

    /** Sets whether the schema is created at startup. */
    public void setCreateSchema(boolean createSchema) {
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
