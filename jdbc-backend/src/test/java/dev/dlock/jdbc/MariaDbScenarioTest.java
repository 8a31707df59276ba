package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.testkit.ServerExtension;

/** The database scenarios on a MariaDB server of this class: a killed connection, a restart during a hold, cleanup and tokens. */
class MariaDbScenarioTest {

    /** Makes the free rows of a key look released two hours ago. */
    static final String AGE_FREE_ROWS =
            "UPDATE dlock_locks SET expires_at = expires_at - INTERVAL 2 HOUR WHERE lock_key = ? AND owner IS NULL";

    @RegisterExtension
    static final ServerExtension<MariaDbServer> MARIADB = new ServerExtension<>("MariaDB server", MariaDbServer::start);

    private static MariaDbServer mariaDb;

    @BeforeAll
    static void prepareServer() {
        mariaDb = MARIADB.server();
        JdbcBackendFactory.createSchema(connection());
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
        ScenarioSupport.restartShorterThanTheLeaseKeepsTheLock(connection(), () -> {
            mariaDb.kill();
            mariaDb.launch();
        });
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
