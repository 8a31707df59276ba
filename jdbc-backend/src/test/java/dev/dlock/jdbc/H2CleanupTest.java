package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Cleanup and fencing tokens on an in-memory H2 database, whose DELETE bounds rows its own way. */
class H2CleanupTest {

    private static final String URL = "jdbc:h2:mem:dlock-cleanup;DB_CLOSE_DELAY=-1";
    private static final String AGE_FREE_ROWS =
            "UPDATE dlock_locks SET expires_at = DATEADD(HOUR, -2, expires_at) WHERE lock_key = ? AND owner IS NULL";

    private static Connection keepAlive;

    @BeforeAll
    static void createDatabase() throws SQLException {
        keepAlive = DriverManager.getConnection(URL, "sa", "");
        try (HikariDataSource pool = JdbcBackendFactory.pool(connection(), 1)) {
            JdbcLockBackend.builder(pool).createSchema(true).build().close();
        }
    }

    @AfterAll
    static void dropDatabase() throws SQLException {
        keepAlive.close();
    }

    private static String connection() {
        return JdbcBackendFactory.connection(URL, "sa", "");
    }

    @Test
    void cleanupDeletesOnlyLongIdleRowsAndTheNextTokenOfADeletedKeyIsStillLarger() throws Exception {
        ScenarioSupport.cleanupDeletesOnlyLongIdleRows(connection(), () -> DriverManager.getConnection(URL, "sa", ""), AGE_FREE_ROWS);
    }

    @Test
    void tokensOfAKeyKeepRisingWhileCleanupDeletesItsRowBetweenHolds() throws Exception {
        ScenarioSupport.tokensKeepRisingWhileCleanupDeletesTheRow(connection(), () -> DriverManager.getConnection(URL, "sa", ""),
                AGE_FREE_ROWS);
    }
}
