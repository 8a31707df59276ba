package dev.dlock.jdbc;

import dev.dlock.core.LockKind;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.ServerExtension;

import static dev.dlock.jdbc.ScenarioSupport.awaitTrue;
import static dev.dlock.jdbc.ScenarioSupport.queryValue;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The token scenarios through the MySQL token path (no sequence: {@code dialect=mysql} forced) on a MariaDB
 * server of this class: tokens count up in each key's row, and a row that cleanup deleted comes back above
 * every token it ever had, also while acquire statements are in flight.
 */
class MariaDbMySqlPathScenarioTest {

    @RegisterExtension
    static final ServerExtension<MariaDbServer> MARIADB = new ServerExtension<>("MariaDB server", MariaDbServer::start);

    private static MariaDbServer mariaDb;

    @BeforeAll
    static void prepareServer() {
        mariaDb = MARIADB.server();
        JdbcBackendFactory.createSchema(connection());
    }

    private static String connection() {
        return MariaDbMySqlPathContractTest.connectionOf(mariaDb);
    }

    @Test
    void theSchemaNeedsNoSequence() throws Exception {
        try (Connection admin = mariaDb.admin()) {
            assertThat(((Number) ScenarioSupport.queryValue(admin, "SELECT COUNT(*) FROM information_schema.TABLES"
                    + " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'SEQUENCE'", null)).longValue())
                    .as("sequences created by createSchema(true)").isZero();
        }
        assertThat(LockSchema.ddl(JdbcDialect.valueOf("MYSQL"), "dlock_locks")).doesNotContainIgnoringCase("SEQUENCE");
    }

    /**
     * The window the floor's shared lock closes: a stalled acquire (held in a proxy after it read the floor, before
     * its insert reaches the server) creates a key's row, while another client creates the row itself, takes and
     * releases the key, and cleanup, asked to delete that row, raises the floor. The stalled insert, let go, must
     * not start the row at the floor it read before: cleanup waits for its transaction instead (or, had it deleted
     * the row, the late insert would give the key the earlier holder's token again).
     */
    @Test
    void anAcquireStalledBetweenReadingTheFloorAndInsertingStillGetsATokenAboveTheHolderBeforeIt() throws Exception {
        String key = "stalled-create:" + System.nanoTime();
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (StallingProxy proxy = StallingProxy.start(mariaDb.port(), "INSERT INTO dlock_locks ");
             HikariDataSource stalledPool = JdbcBackendFactory.pool(JdbcBackendFactory.connection(
                     "jdbc:mariadb://127.0.0.1:" + proxy.port() + "/dlock", "root", "", "mysql"), 2);
             HikariDataSource otherPool = JdbcBackendFactory.pool(connection(), 2);
             // The longest query timeout: no statement of the test may be cancelled while it waits.
             JdbcLockBackend stalled = JdbcLockBackend.builder(stalledPool).dialect(JdbcDialect.MYSQL)
                     .queryTimeout(Duration.ofSeconds(30)).cleanupInterval(Duration.ZERO).build();
             JdbcLockBackend other = JdbcLockBackend.builder(otherPool).dialect(JdbcDialect.MYSQL)
                     .queryTimeout(Duration.ofSeconds(30)).cleanupInterval(Duration.ZERO).build();
             Connection observer = mariaDb.admin()) {
            Future<AcquireResult> stalledAcquire = threads.submit(() -> stalled.tryAcquire(LockKind.EXCLUSIVE, key, "stalled-owner", 60_000));
            proxy.awaitStalled(Duration.ofSeconds(10));

            AcquireResult earlier = other.tryAcquire(LockKind.EXCLUSIVE, key, "earlier-owner", 60_000);
            assertThat(earlier).as("the key is free while the other acquire is stalled").isInstanceOf(AcquireResult.Acquired.class);
            long earlierToken = ((AcquireResult.Acquired) earlier).fencingToken();
            assertThat(other.release(LockKind.EXCLUSIVE, key, "earlier-owner", earlierToken)).isEqualTo(ReleaseResult.RELEASED);
            try (PreparedStatement age = observer.prepareStatement(MariaDbScenarioTest.AGE_FREE_ROWS)) {
                age.setString(1, key);
                assertThat(age.executeUpdate()).isEqualTo(1);
            }
            Future<Integer> cleanup = threads.submit(other::cleanUp);
            awaitTrue(Duration.ofSeconds(10), "cleanup ran or waits on the floor", () -> cleanup.isDone()
                    || queryValue(observer, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID()"
                    + " AND INFO LIKE '%UPDATE dlock_locks_token_floor%'", null) != null);
            proxy.release();

            AcquireResult late = stalledAcquire.get(30, TimeUnit.SECONDS);
            assertThat(late).as("the key was free when the stalled statement went on").isInstanceOf(AcquireResult.Acquired.class);
            assertThat(((AcquireResult.Acquired) late).fencingToken())
                    .as("the stalled acquisition's token against the earlier holder's %d", earlierToken).isGreaterThan(earlierToken);
            assertThat(cleanup.get(30, TimeUnit.SECONDS)).as("rows cleanup deleted: the key is held again").isZero();
        } finally {
            threads.shutdownNow();
        }
    }

    /**
     * The window the token guard of the cleanup's DELETE closes: cleanup read the largest token among idle rows,
     * then stalls (held in a proxy) before raising the floor and deleting; meanwhile the key is taken and released
     * again, at a larger token, and its row looks idle again. The DELETE must leave that row, since the floor is
     * raised only to the token read before: otherwise the key's next row would start at the token just issued.
     * On a table of its own, so that no other test's rows raise the largest idle token.
     */
    @Test
    void aCleanupStalledBeforeItsDeleteLeavesARowTakenMeanwhileAndTheKeysNextTokenIsStillLarger() throws Exception {
        String table = "stalled_cleanup_locks";
        String key = "stalled-cleanup:" + System.nanoTime();
        String ageFreeRows = MariaDbScenarioTest.AGE_FREE_ROWS.replace("dlock_locks", table);
        ExecutorService threads = Executors.newSingleThreadExecutor();
        try (StallingProxy proxy = StallingProxy.start(mariaDb.port(), "UPDATE " + table + "_token_floor");
             HikariDataSource sweeperPool = JdbcBackendFactory.pool(JdbcBackendFactory.connection(
                     "jdbc:mariadb://127.0.0.1:" + proxy.port() + "/dlock", "root", "", "mysql"), 1);
             HikariDataSource lockPool = JdbcBackendFactory.pool(connection(), 2);
             JdbcLockBackend sweeper = JdbcLockBackend.builder(sweeperPool).dialect(JdbcDialect.MYSQL).tableName(table)
                     .queryTimeout(Duration.ofSeconds(30)).cleanupInterval(Duration.ZERO).build();
             JdbcLockBackend locks = JdbcLockBackend.builder(lockPool).dialect(JdbcDialect.MYSQL).tableName(table)
                     .createSchema(true).cleanupInterval(Duration.ZERO).build();
             Connection observer = mariaDb.admin();
             PreparedStatement age = observer.prepareStatement(ageFreeRows)) {
            age.setString(1, key);
            takeAndRelease(locks, key, "first-owner");
            assertThat(age.executeUpdate()).isEqualTo(1);
            Future<Integer> cleanup = threads.submit(sweeper::cleanUp);
            proxy.awaitStalled(Duration.ofSeconds(10));

            long meanwhile = takeAndRelease(locks, key, "meanwhile-owner");
            assertThat(age.executeUpdate()).isEqualTo(1);
            proxy.release();
            cleanup.get(30, TimeUnit.SECONDS);

            assertThat(takeAndRelease(locks, key, "next-owner"))
                    .as("the next token against the one issued while cleanup stalled, %d", meanwhile).isGreaterThan(meanwhile);
        } finally {
            threads.shutdownNow();
        }
    }

    /** Takes the free {@code key} as {@code owner}, releases it, and returns its token. */
    private static long takeAndRelease(JdbcLockBackend locks, String key, String owner) {
        AcquireResult taken = locks.tryAcquire(LockKind.EXCLUSIVE, key, owner, 60_000);
        assertThat(taken).as("%s takes the free key", owner).isInstanceOf(AcquireResult.Acquired.class);
        long token = ((AcquireResult.Acquired) taken).fencingToken();
        assertThat(locks.release(LockKind.EXCLUSIVE, key, owner, token)).isEqualTo(ReleaseResult.RELEASED);
        return token;
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
        ScenarioSupport.cleanupDeletesOnlyLongIdleRows(connection(), mariaDb::admin, MariaDbScenarioTest.AGE_FREE_ROWS);
    }

    @Test
    void tokensOfAKeyKeepRisingWhileCleanupDeletesItsRowBetweenHolds() throws Exception {
        ScenarioSupport.tokensKeepRisingWhileCleanupDeletesTheRow(connection(), mariaDb::admin,
                MariaDbScenarioTest.AGE_FREE_ROWS);
    }
}
