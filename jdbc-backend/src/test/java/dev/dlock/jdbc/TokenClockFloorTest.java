package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The JDBC store's fencing tokens start at the database's clock in microseconds, the floor Redis's tokens have, so a
 * guard that accepted tokens of another store goes on accepting this one's after the store is changed. On every
 * dialect: a fresh schema's first token, and the next token of a row left from before (with a small token, as the
 * sequence alone used to issue), are at least the clock; a second backend (another instance) keeps them increasing.
 */
class TokenClockFloorTest {

    /** Slack for the database's clock against this JVM's (both on this machine). */
    private static final long SLACK_MICROS = TimeUnit.SECONDS.toMicros(60);

    @Test
    void tokensStartAtTheClockOnPostgresql() throws Exception {
        try (PostgresServer postgres = PostgresServer.start()) {
            check(PostgresContractTest.connectionOf(postgres), JdbcDialect.POSTGRESQL);
        }
    }

    @Test
    void tokensStartAtTheClockOnMariaDbAndTheMySqlPath() throws Exception {
        try (MariaDbServer mariaDb = MariaDbServer.start()) {
            check(MariaDbContractTest.connectionOf(mariaDb), JdbcDialect.MARIADB);
            check(MariaDbContractTest.connectionOf(mariaDb), JdbcDialect.MYSQL);
        }
    }

    @Test
    void tokensStartAtTheClockOnH2() throws Exception {
        check(JdbcBackendFactory.connection("jdbc:h2:mem:token-floor;DB_CLOSE_DELAY=-1", "sa", ""), JdbcDialect.H2);
    }

    private static void check(String connection, JdbcDialect dialect) throws Exception {
        String table = "floor_" + dialect.name().toLowerCase();
        long clockBefore = TimeUnit.MILLISECONDS.toMicros(System.currentTimeMillis()) - SLACK_MICROS;
        try (HikariDataSource pool = JdbcBackendFactory.pool(connection, 4)) {
            JdbcLockBackend.builder(pool).tableName(table).dialect(dialect).applySchema();
            try (Connection admin = pool.getConnection(); Statement statement = admin.createStatement()) {
                statement.execute("INSERT INTO " + table + " (lock_key, owner, token, expires_at) VALUES ('left-from-before', NULL, 42, "
                        + LockStatements.now(dialect) + ")");
            }
            long fresh;
            long leftFromBefore;
            try (JdbcLockBackend first = backend(pool, table, dialect)) {
                fresh = token(first.tryAcquire(LockKind.EXCLUSIVE, "fresh", "owner-1", 10_000));
                leftFromBefore = token(first.tryAcquire(LockKind.EXCLUSIVE, "left-from-before", "owner-1", 10_000));
                assertThat(fresh).as("%s: a new key's first token against the clock in µs", dialect).isGreaterThanOrEqualTo(clockBefore);
                assertThat(leftFromBefore).as("%s: the next token of a row whose token was 42", dialect)
                        .isGreaterThanOrEqualTo(clockBefore);
                first.release(LockKind.EXCLUSIVE, "fresh", "owner-1", fresh);
                first.release(LockKind.EXCLUSIVE, "left-from-before", "owner-1", leftFromBefore);
            }
            try (JdbcLockBackend second = backend(pool, table, dialect)) {
                assertThat(token(second.tryAcquire(LockKind.EXCLUSIVE, "fresh", "owner-2", 10_000)))
                        .as("%s: a second instance's token of the key", dialect).isGreaterThan(fresh);
                assertThat(token(second.tryAcquire(LockKind.EXCLUSIVE, "left-from-before", "owner-2", 10_000)))
                        .as("%s: a second instance's token of the old key", dialect).isGreaterThan(leftFromBefore);
            }
        }
    }

    private static JdbcLockBackend backend(HikariDataSource pool, String table, JdbcDialect dialect) {
        return JdbcLockBackend.builder(pool).tableName(table).dialect(dialect).cleanupInterval(Duration.ZERO).build();
    }

    private static long token(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }
}
