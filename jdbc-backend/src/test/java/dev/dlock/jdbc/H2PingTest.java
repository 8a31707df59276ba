package dev.dlock.jdbc;

import java.sql.SQLException;

import dev.dlock.core.LockBackendException;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code ping()} reads the lock table, so a health check or a start check finds a missing table
 * instead of answering UP until the first lock fails; on in-memory H2 databases of its own.
 */
class H2PingTest {

    @Test
    void pingFailsWhenTheLockTableIsMissing() {
        try (JdbcLockBackend backend = JdbcLockBackend.builder(h2("ping-no-table")).build()) {
            assertThatThrownBy(backend::ping).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("DLOCK_LOCKS")
                    .satisfies(failure -> assertThat(((LockBackendException) failure).storeException())
                            .isInstanceOfSatisfying(SQLException.class, e ->
                                    assertThat(e.getSQLState()).as("SQLState class of an undefined table").startsWith("42")));
        }
    }

    @Test
    void pingAnswersOnceTheLockTableExists() {
        try (JdbcLockBackend backend = JdbcLockBackend.builder(h2("ping-table")).createSchema(true).build()) {
            assertThat(backend.ping()).isPositive();
        }
    }

    private static JdbcDataSource h2(String name) {
        JdbcDataSource dataSource = new JdbcDataSource();
        dataSource.setURL("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1");
        return dataSource;
    }
}
