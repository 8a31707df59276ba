package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Two backends raising the token floor at once must not lower the sequence: the first backend stops between reading
 * the sequence and moving it, the second raises it (to its own, later clock) and issues a token meanwhile, and every
 * token issued after that one is greater than it. The second backend either finishes inside the pause (MariaDB,
 * whose SETVAL never lowers) or waits for the first (H2, PostgreSQL), which the pause sees in the database's lock
 * table; either way the pause ends on that event, not on a sleep.
 */
class TokenFloorRaceTest {

    private static final long PAUSE_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(30);

    @Test
    void aSecondRaiseDuringTheFirstDoesNotLowerTokensOnH2() throws Exception {
        race(JdbcBackendFactory.connection("jdbc:h2:mem:token-floor-race;DB_CLOSE_DELAY=-1", "sa", ""), JdbcDialect.H2,
                "SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS WHERE BLOCKER_ID IS NOT NULL");
    }

    @Test
    void aSecondRaiseDuringTheFirstDoesNotLowerTokensOnPostgresql() throws Exception {
        try (PostgresServer postgres = PostgresServer.start()) {
            race(PostgresContractTest.connectionOf(postgres), JdbcDialect.POSTGRESQL,
                    "SELECT COUNT(*) FROM pg_locks WHERE NOT granted");
        }
    }

    @Test
    void aSecondRaiseDuringTheFirstDoesNotLowerTokensOnMariaDb() throws Exception {
        try (MariaDbServer mariaDb = MariaDbServer.start()) {
            race(MariaDbContractTest.connectionOf(mariaDb), JdbcDialect.MARIADB,
                    "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT'");
        }
    }

    /** One acquisition: when it started and ended (System.nanoTime) and the token it got. */
    private record Issued(String by, long start, long end, long token) {
    }

    private static void race(String connection, JdbcDialect dialect, String waitingSessions) throws Exception {
        String table = "race_" + dialect.name().toLowerCase();
        ExecutorService secondCaller = Executors.newSingleThreadExecutor();
        try (HikariDataSource pool = JdbcBackendFactory.pool(connection, 6)) {
            JdbcLockBackend.builder(pool).tableName(table).dialect(dialect).applySchema();
            List<Issued> issued = new ArrayList<>();
            try (JdbcLockBackend first = backend(pool, table, dialect);
                 JdbcLockBackend second = backend(pool, table, dialect)) {
                List<Future<Issued>> during = new ArrayList<>();
                first.afterTokenFloorRead(() -> {
                    Future<Issued> secondsAcquisition = secondCaller.submit(() -> acquire(second, "second", "key-second-0"));
                    during.add(secondsAcquisition);
                    long deadline = System.nanoTime() + PAUSE_LIMIT_NANOS;
                    while (!secondsAcquisition.isDone() && waiting(pool, waitingSessions) == 0) {
                        if (System.nanoTime() > deadline) {
                            fail("the second backend's acquisition neither finished nor waited for the first's raise");
                        }
                        Thread.onSpinWait();
                    }
                });
                issued.add(acquire(first, "first", "key-first-0"));
                first.afterTokenFloorRead(() -> { });
                assertThat(during).as("the first backend raised the floor (and paused) once").hasSize(1);
                issued.add(during.get(0).get(30, TimeUnit.SECONDS));
                for (int i = 1; i <= 5; i++) {
                    issued.add(acquire(first, "first", "key-first-" + i));
                    issued.add(acquire(second, "second", "key-second-" + i));
                }
            }
            for (Issued earlier : issued) {
                for (Issued later : issued) {
                    if (earlier.end() < later.start()) {
                        assertThat(later.token())
                                .as("%s: token of %s issued after %s's %d (all: %s)", dialect, later.by(), earlier.by(),
                                        earlier.token(), issued)
                                .isGreaterThan(earlier.token());
                    }
                }
            }
        } finally {
            secondCaller.shutdownNow();
        }
    }

    private static Issued acquire(JdbcLockBackend backend, String by, String key) {
        long start = System.nanoTime();
        AcquireResult result = backend.tryAcquire(LockKind.EXCLUSIVE, key, by, 10_000);
        long end = System.nanoTime();
        assertThat(result).as("%s acquiring %s", by, key).isInstanceOf(AcquireResult.Acquired.class);
        return new Issued(by, start, end, ((AcquireResult.Acquired) result).fencingToken());
    }

    private static long waiting(HikariDataSource pool, String waitingSessions) {
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement();
             ResultSet row = statement.executeQuery(waitingSessions)) {
            row.next();
            return row.getLong(1);
        } catch (Exception e) {
            throw new IllegalStateException("could not read the waiting sessions: " + waitingSessions, e);
        }
    }

    private static JdbcLockBackend backend(HikariDataSource pool, String table, JdbcDialect dialect) {
        return JdbcLockBackend.builder(pool).tableName(table).dialect(dialect).cleanupInterval(Duration.ZERO).build();
    }
}
