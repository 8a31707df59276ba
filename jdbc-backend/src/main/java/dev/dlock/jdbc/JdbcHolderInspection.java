package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.StoredHolder;

/**
 * Who holds a key in the lock table, and an operator's forced release. The holder is the row's owner while its lease
 * runs, with {@code expires_at} minus the database's own now as the remaining lease (the JVMs' clocks never count). A
 * forced release clears the owner as a release does (the row and its token stay, so the next token is still larger),
 * in one transaction that first locks the row, and on PostgreSQL notifies the key's channel at commit. The table
 * keeps exclusive locks only: other kinds have no holders here.
 */
final class JdbcHolderInspection implements HolderInspection {

    private final JdbcLockBackend backend;
    private final String holders;
    private final String lockedHolder;
    private final String free;
    private final boolean notifies;

    JdbcHolderInspection(JdbcLockBackend backend) {
        this.backend = backend;
        JdbcDialect dialect = backend.dialect();
        String table = backend.tableName();
        String now = LockStatements.now(dialect);
        this.holders = "SELECT owner, " + LockStatements.remainingMillis(dialect) + " FROM " + table
                + " WHERE lock_key = ? AND owner IS NOT NULL AND expires_at > " + now;
        this.lockedHolder = holders + " FOR UPDATE";
        this.free = "UPDATE " + table + " SET owner = NULL, token = token + 1, expires_at = " + now
                + " WHERE lock_key = ? AND owner = ?";
        this.notifies = dialect == JdbcDialect.POSTGRESQL;
    }

    @Override
    public List<StoredHolder> holders(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            return List.of();
        }
        try (Connection connection = backend.connection()) {
            return read(connection, holders, key);
        } catch (SQLException e) {
            throw backend.failure("holders", key, e);
        }
    }

    @Override
    public List<StoredHolder> forceRelease(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            return List.of();
        }
        try (Connection connection = backend.connection()) {
            return JdbcLockBackend.inOneTransaction(connection, () -> {
                List<StoredHolder> removed = read(connection, lockedHolder, key);
                for (StoredHolder holder : removed) {
                    try (PreparedStatement statement = backend.prepare(connection, free)) {
                        statement.setString(1, key);
                        statement.setString(2, holder.owner());
                        statement.executeUpdate();
                    }
                }
                if (notifies && !removed.isEmpty()) {
                    // Delivered at commit, as a release's notice is.
                    try (PreparedStatement statement = backend.prepare(connection, "SELECT pg_notify(?, '')")) {
                        statement.setString(1, backend.channelOf(key));
                        statement.executeQuery().close();
                    }
                }
                return removed;
            });
        } catch (SQLException e) {
            throw backend.failure("forceRelease", key, e);
        }
    }

    private List<StoredHolder> read(Connection connection, String query, String key) throws SQLException {
        try (PreparedStatement statement = backend.prepare(connection, query)) {
            statement.setString(1, key);
            try (ResultSet rows = statement.executeQuery()) {
                List<StoredHolder> found = new ArrayList<>(1);
                while (rows.next()) {
                    found.add(new StoredHolder(rows.getString(1), Math.max(0, rows.getLong(2))));
                }
                return List.copyOf(found);
            }
        }
    }
}
