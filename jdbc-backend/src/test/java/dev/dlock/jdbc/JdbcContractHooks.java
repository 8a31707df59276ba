package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store hooks of the contract suite, the same for every database: rows deleted with plain SQL,
 * and the statements on the lock table counted by the server's own statistics.
 */
final class JdbcContractHooks {

    /** Gives an admin connection to the database under test. */
    interface Admin {
        Connection open() throws SQLException;
    }

    private final Admin admin;
    private final String countSql;

    /**
     * {@code countSql} sums the executions of statements whose text matches its one parameter, which
     * is {@code %dlock_locks%}; passed as a parameter so that the count query itself does not match.
     */
    JdbcContractHooks(Admin admin, String countSql) {
        this.admin = admin;
        this.countSql = countSql;
    }

    void deleteKey(String key) {
        try (Connection connection = admin.open();
             PreparedStatement delete = connection.prepareStatement("DELETE FROM dlock_locks WHERE lock_key = ?")) {
            delete.setString(1, key);
            assertThat(delete.executeUpdate()).as("deleted the row of %s", key).isEqualTo(1);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    void wipe() {
        execute("DELETE FROM dlock_locks");
    }

    void execute(String sql) {
        try (Connection connection = admin.open(); Statement statement = connection.createStatement()) {
            statement.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    long statementCount() {
        try (Connection connection = admin.open(); PreparedStatement count = connection.prepareStatement(countSql)) {
            count.setString(1, "%dlock_locks%");
            try (ResultSet row = count.executeQuery()) {
                row.next();
                return row.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
