package dev.dlock.fencing;

import java.util.Locale;

import org.springframework.jdbc.core.JdbcOperations;

/** The SQL of the databases {@link JdbcFencing} writes fence rows to; only the insert-or-advance of a fence row differs. */
public enum FenceDialect {

    /** PostgreSQL: one {@code INSERT ... ON CONFLICT DO UPDATE ... WHERE}. */
    POSTGRESQL,
    /** H2 2.x: one {@code MERGE ... USING ... WHEN MATCHED AND}. */
    H2,
    /**
     * MySQL and MariaDB: an insert of a zero token when the row is missing, then a conditional {@code UPDATE} that
     * locks it. Counts "found" rows, the drivers' default: with {@code useAffectedRows=true} a repeated token is refused.
     */
    MYSQL;

    /** The dialect of a database by its JDBC product name ({@code DatabaseMetaData.getDatabaseProductName()}). */
    public static FenceDialect of(String databaseProductName) {
        String name = databaseProductName == null ? "" : databaseProductName.toLowerCase(Locale.ROOT);
        if (name.contains("postgres")) {
            return POSTGRESQL;
        }
        if (name.equals("h2")) {
            return H2;
        }
        if (name.contains("mysql") || name.contains("mariadb")) {
            return MYSQL;
        }
        throw new IllegalArgumentException("No fencing SQL for database '" + databaseProductName
                + "'; supported: PostgreSQL, H2, MySQL, MariaDB");
    }

    /** Advances {@code table}'s fence row of {@code resource} to {@code token} unless it holds a larger one: 1 row, else 0. */
    int claim(JdbcOperations jdbc, String table, String resource, long token) {
        return switch (this) {
            case POSTGRESQL -> jdbc.update("INSERT INTO " + table + " AS f (resource, token) VALUES (?, ?) "
                    + "ON CONFLICT (resource) DO UPDATE SET token = EXCLUDED.token WHERE f.token <= EXCLUDED.token",
                    resource, token);
            case H2 -> jdbc.update("MERGE INTO " + table + " f USING (VALUES (CAST(? AS VARCHAR(255)), CAST(? AS BIGINT))) "
                    + "s(resource, token) ON f.resource = s.resource "
                    + "WHEN MATCHED AND f.token <= s.token THEN UPDATE SET token = s.token "
                    + "WHEN NOT MATCHED THEN INSERT (resource, token) VALUES (s.resource, s.token)", resource, token);
            case MYSQL -> {
                jdbc.update("INSERT INTO " + table + " (resource, token) VALUES (?, 0) ON DUPLICATE KEY UPDATE resource = resource",
                        resource);
                yield jdbc.update("UPDATE " + table + " SET token = ? WHERE resource = ? AND token <= ?", token, resource, token);
            }
        };
    }
}
