package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.zaxxer.hikari.HikariDataSource;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;

import static dev.dlock.jdbc.ScenarioSupport.awaitTrue;
import static org.assertj.core.api.Assertions.assertThat;

/** The database scenarios on a MariaDB server of this class: a killed connection, a restart during a hold, cleanup and tokens. */
class MariaDbScenarioTest {

    private static final String AGE_FREE_ROWS =
            "UPDATE dlock_locks SET expires_at = expires_at - INTERVAL 2 HOUR WHERE lock_key = ? AND owner IS NULL";

    private static MariaDbServer mariaDb;

    @BeforeAll
    static void startMariaDb() {
        mariaDb = MariaDbServer.start();
        try (HikariDataSource pool = JdbcBackendFactory.pool(connection(), 1)) {
            JdbcLockBackend.builder(pool).createSchema(true).build().close();
        }
    }

    @AfterAll
    static void stopMariaDb() {
        if (mariaDb != null) {
            mariaDb.close();
        }
    }

    private static String connection() {
        return MariaDbContractTest.connectionOf(mariaDb);
    }

    @Test
    void aConnectionKilledMidRenewalIsRetriedAndTheLockKept() throws Exception {
        ScenarioSupport.connectionKilledMidRenewal(connection(), mariaDb::admin,
                "SELECT 1 FROM dlock_locks WHERE lock_key = ? FOR UPDATE",
                new ScenarioSupport.SessionKiller() {
                    @Override
                    public Object blockedRenewal(Connection admin) {
                        // The driver sends its query timeout as SET STATEMENT max_statement_time=… FOR <statement>.
                        return ScenarioSupport.queryValue(admin, "SELECT ID FROM information_schema.PROCESSLIST"
                                + " WHERE ID <> CONNECTION_ID() AND INFO LIKE '%UPDATE dlock_locks SET expires_at%'", null);
                    }

                    @Override
                    public void kill(Connection admin, Object session) throws SQLException {
                        admin.createStatement().execute("KILL CONNECTION " + ((Number) session).longValue());
                    }
                });
    }

    @Test
    void aRestartShorterThanTheLeaseKeepsTheLock() {
        try (ScenarioSupport support = new ScenarioSupport(connection())) {
            String key = "restart-hold:" + System.nanoTime();
            ScenarioSupport.Events events = new ScenarioSupport.Events();
            LockManager holder = support.manager(support.backend(), b -> b.leaseTime(Duration.ofSeconds(10)).listener(events));
            LockManager other = support.manager();
            long token;
            try (LockHandle lock = holder.acquire(key, Duration.ZERO)) {
                token = lock.fencingToken();
                mariaDb.kill();
                mariaDb.launch();
                int before = events.count();
                awaitTrue(Duration.ofSeconds(15), () -> "a renewal succeeded after the restart; " + events.events,
                        () -> events.renewedAfter(before));
                assertThat(events.lost()).as("no loss: %s", events.events).isFalse();
                assertThat(lock.isHeld()).isTrue();
                assertThat(other.tryAcquire(key)).as("the row survived the restart").isEmpty();
            }
            try (LockHandle next = other.acquire(key, Duration.ofSeconds(5))) {
                assertThat(next.fencingToken()).as("the sequence never goes back, restarts included").isGreaterThan(token);
            }
        }
    }

    @Test
    void cleanupDeletesOnlyLongIdleRowsAndTheNextTokenOfADeletedKeyIsStillLarger() throws Exception {
        ScenarioSupport.cleanupDeletesOnlyLongIdleRows(connection(), mariaDb::admin, AGE_FREE_ROWS);
    }

    @Test
    void tokensOfAKeyKeepRisingWhileCleanupDeletesItsRowBetweenHolds() throws Exception {
        ScenarioSupport.tokensKeepRisingWhileCleanupDeletesTheRow(connection(), mariaDb::admin, AGE_FREE_ROWS);
    }
}
