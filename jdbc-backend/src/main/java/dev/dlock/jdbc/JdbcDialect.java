package dev.dlock.jdbc;

import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.util.Locale;

/**
 * The databases the JDBC store speaks to, each with its own SQL: the time functions of the database
 * (the JVM's clock is never used), its upsert, and where fencing tokens come from (a sequence, or on
 * MySQL, which has none, a counter in each key's row).
 */
public enum JdbcDialect {

    /** PostgreSQL 14 or later: {@code INSERT … ON CONFLICT}, {@code clock_timestamp()}, LISTEN/NOTIFY release notices. */
    POSTGRESQL("postgresql"),
    /** MariaDB 10.6 or later: {@code INSERT … ON DUPLICATE KEY UPDATE … RETURNING}, sequences, {@code UTC_TIMESTAMP(6)}. */
    MARIADB("mariadb"),
    /**
     * MySQL 8.0 or later, which has no sequences: each key's row counts its tokens, and a new row starts
     * above the table's token floor, which cleanup raises in the transaction that deletes rows. Also runs on MariaDB.
     */
    MYSQL("mysql"),
    /** H2 2.x, for tests and single-node use: {@code MERGE}, sequences, {@code CURRENT_TIMESTAMP}. */
    H2("h2");

    private final String resourceName;

    JdbcDialect(String resourceName) {
        this.resourceName = resourceName;
    }

    /** The classpath resource holding this dialect's DDL, with {@code ${table}} where the table name goes. */
    public String schemaResource() {
        return "/dev/dlock/jdbc/schema-" + resourceName + ".sql";
    }

    /**
     * The dialect of the database {@code metaData} describes, from its product name: MySQL gets
     * {@link #MYSQL}, and MariaDB gets {@link #MARIADB} also through MySQL Connector/J, which names
     * every server MySQL but shows MariaDB in the version.
     */
    public static JdbcDialect detect(DatabaseMetaData metaData) throws SQLException {
        String product = metaData.getDatabaseProductName();
        String name = product == null ? "" : product.toLowerCase(Locale.ROOT);
        if (name.contains("postgresql")) {
            return POSTGRESQL;
        }
        if (name.contains("mariadb") || name.contains("mysql") && isMariaDbVersion(metaData)) {
            return MARIADB;
        }
        if (name.equals("h2")) {
            return H2;
        }
        if (name.contains("mysql")) {
            return MYSQL;
        }
        throw new IllegalStateException("dlock JDBC store: unsupported database '" + product
                + "'; supported are PostgreSQL, MariaDB, MySQL and H2 (set the dialect explicitly to override detection)");
    }

    private static boolean isMariaDbVersion(DatabaseMetaData metaData) throws SQLException {
        String version = metaData.getDatabaseProductVersion();
        return version != null && version.toLowerCase(Locale.ROOT).contains("mariadb");
    }
}
