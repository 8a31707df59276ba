package dev.dlock.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import javax.sql.DataSource;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.LockBackendException;

/**
 * Creates a lock table and what its tokens need (the sequence; on MySQL the floor table), each only if missing,
 * so that a fleet of instances starting at once on a fresh database all start. {@code IF NOT EXISTS} alone does
 * not do that: on PostgreSQL two sessions creating the same object at once both find it missing, and the second
 * fails on the catalog's unique index ({@code duplicate key value violates unique constraint
 * "pg_class_relname_nsp_index"}). So the creations of one table are serialized by a lock of the database —
 * a transaction-scoped advisory lock on PostgreSQL, a named lock ({@code GET_LOCK}) on MariaDB and MySQL — and on
 * every database a failed attempt is run again (at most {@value #ATTEMPTS} times): once the other creator has
 * committed, the statements find everything in place and change nothing.
 */
final class LockSchema {

    private static final Logger log = LoggerFactory.getLogger(LockSchema.class);
    private static final int ATTEMPTS = 3;

    private LockSchema() {
    }

    /** Creates what is missing of {@code table}'s schema; waits at most {@code timeoutSeconds} per statement and for another creator. */
    static void create(DataSource dataSource, JdbcDialect dialect, String table, int timeoutSeconds) {
        List<String> statements = statements(dialect, table);
        SQLException failure = null;
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            try (Connection connection = dataSource.getConnection()) {
                createOnce(connection, dialect, table, statements, timeoutSeconds);
                if (failure != null) {
                    log.debug("Created the schema of {} on attempt {}, after: {}", table, attempt, failure.toString());
                }
                return;
            } catch (SQLException e) {
                if (failure != null) {
                    e.addSuppressed(failure);
                }
                failure = e;
                // A database that cannot be reached will not be reached on the next attempt either.
                if (e.getSQLState() != null && e.getSQLState().startsWith("08")) {
                    break;
                }
            }
        }
        throw LockBackendException.storeFailure("JDBC schema creation of table " + table + " (" + dialect + ") failed", failure);
    }

    private static void createOnce(Connection connection, JdbcDialect dialect, String table, List<String> statements,
                                   int timeoutSeconds) throws SQLException {
        switch (dialect) {
            // DDL is transactional here: the lock is held until the commit makes the objects visible to the next creator.
            case POSTGRESQL -> JdbcLockBackend.inOneTransaction(connection, () -> {
                try (PreparedStatement lock = connection.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
                    lock.setQueryTimeout(timeoutSeconds);
                    lock.setLong(1, advisoryLockId(table));
                    lock.execute();
                }
                execute(connection, statements, timeoutSeconds);
                return null;
            });
            // DDL commits at once here; the named lock belongs to the session until released.
            case MARIADB, MYSQL -> {
                connection.setAutoCommit(true);
                String name = namedLock(table);
                try (PreparedStatement lock = connection.prepareStatement("SELECT GET_LOCK(?, ?)")) {
                    lock.setString(1, name);
                    lock.setInt(2, timeoutSeconds);
                    try (ResultSet granted = lock.executeQuery()) {
                        if (!granted.next() || granted.getInt(1) != 1) {
                            throw new SQLException("waited " + timeoutSeconds + " s for lock '" + name
                                    + "' of another instance creating " + table, "HY000");
                        }
                    }
                }
                try {
                    execute(connection, statements, timeoutSeconds);
                } finally {
                    try (PreparedStatement unlock = connection.prepareStatement("SELECT RELEASE_LOCK(?)")) {
                        unlock.setString(1, name);
                        unlock.execute();
                    }
                }
            }
            case H2 -> {
                connection.setAutoCommit(true);
                execute(connection, statements, timeoutSeconds);
            }
        }
    }

    private static void execute(Connection connection, List<String> statements, int timeoutSeconds) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.setQueryTimeout(timeoutSeconds);
            for (String sql : statements) {
                statement.execute(sql);
            }
        }
    }

    /** The advisory lock of {@code table}'s creation on PostgreSQL: 64 bits of a hash of its name. */
    static long advisoryLockId(String table) {
        byte[] hash = sha256("dlock schema " + table);
        long id = 0;
        for (int i = 0; i < Long.BYTES; i++) {
            id = id << 8 | (hash[i] & 0xFF);
        }
        return id;
    }

    /** The named lock of {@code table}'s creation on MariaDB and MySQL (at most 64 characters). */
    static String namedLock(String table) {
        String name = "dlock_schema_" + table;
        return name.length() <= 64 ? name : "dlock_schema_" + HexFormat.of().formatHex(sha256(table), 0, 20);
    }

    private static byte[] sha256(String text) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    /** The statements of {@link #ddl}, one by one. */
    static List<String> statements(JdbcDialect dialect, String table) {
        List<String> statements = new ArrayList<>();
        for (String part : ddl(dialect, table).split(";")) {
            if (!part.isBlank()) {
                statements.add(part.strip());
            }
        }
        return statements;
    }

    /** The DDL of {@code dialect} for {@code table}, without comments, as shipped in {@link JdbcDialect#schemaResource()}. */
    static String ddl(JdbcDialect dialect, String table) {
        try (InputStream in = LockSchema.class.getResourceAsStream(dialect.schemaResource())) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + dialect.schemaResource());
            }
            StringBuilder ddl = new StringBuilder();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (!line.strip().startsWith("--")) {
                    ddl.append(line).append('\n');
                }
            }
            return ddl.toString().replace("${table}", table);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + dialect.schemaResource(), e);
        }
    }
}
