package dev.dlock.jdbc;

import static dev.dlock.jdbc.ScenarioSupport.awaitTrue;
import static dev.dlock.jdbc.ScenarioSupport.queryValue;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.time.Duration;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.testkit.ServerExtension;

/**
 * An acquire statement that PostgreSQL runs after its client gave up: the proxy holds the statement until the client's
 * network timeout closed the connection (the statement timeout's cancel request finds the server idle, so nothing
 * cancels it) and the acquisition failed; then the statement reaches the server, which takes the key's row for an owner
 * no JVM has. Another JVM waiting for the key must get it within about one renewal period after that, not the lease.
 */
class PostgresLateAcquisitionTest {

    private static final Duration LEASE = Duration.ofSeconds(9);
    /** One renewal period (3 s) and as much again for a loaded machine; the old behaviour took the whole 9 s. */
    private static final Duration FREED_WITHIN = Duration.ofSeconds(6);
    private static final String OWNER_OF = "SELECT owner FROM dlock_locks WHERE lock_key = ?";
    private static final String TOKEN_OF = "SELECT token FROM dlock_locks WHERE lock_key = ?";

    @RegisterExtension
    static final ServerExtension<PostgresServer> POSTGRES = new ServerExtension<>("PostgreSQL server", PostgresServer::start);

    private static PostgresServer postgres;

    @BeforeAll
    static void prepareServer() {
        postgres = POSTGRES.server();
        PostgresContractTest.createSchema(PostgresContractTest.connectionOf(postgres));
    }

    @Test
    void anAcquireStatementThatRunsAfterItsClientGaveUpIsFreedWithinOneRenewalPeriod() throws Exception {
        String key = "late-statement";
        try (StallingProxy proxy = StallingProxy.start(postgres.port(), "WITH taken AS (INSERT INTO");
             HikariDataSource slowPool = JdbcBackendFactory.pool(JdbcBackendFactory.connection(
                     "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres", "postgres", ""), 2);
             JdbcLockBackend slowBackend = JdbcLockBackend.builder(slowPool).dialect(JdbcDialect.POSTGRESQL)
                     .queryTimeout(Duration.ofSeconds(1)).cleanupInterval(Duration.ZERO).build();
             LockManager failing = LockManager.builder(slowBackend).build();
             HikariDataSource pool = JdbcBackendFactory.pool(PostgresContractTest.connectionOf(postgres), 4);
             JdbcLockBackend backend = JdbcLockBackend.builder(pool).queryTimeout(Duration.ofSeconds(2))
                     .cleanupInterval(Duration.ZERO).build();
             LockManager otherJvm = LockManager.builder(backend).build();
             Connection admin = postgres.admin()) {
            // The key's row exists, free: the held statement then takes it in its one run.
            otherJvm.acquire(LockRequest.builder(key).leaseTime(LEASE).waitTime(Duration.ZERO).build()).close();
            LockRequest request = LockRequest.builder(key).leaseTime(LEASE).waitTime(Duration.ZERO).build();

            assertThatThrownBy(() -> failing.acquire(request)).as("the acquisition whose statement is held past the network timeout")
                    .isInstanceOf(LockBackendException.class);
            proxy.awaitStalled(Duration.ofSeconds(10));
            assertThat(queryValue(admin, OWNER_OF, key)).as("the statement has not reached PostgreSQL when its acquisition failed")
                    .isNull();

            Object tokenBefore = queryValue(admin, TOKEN_OF, key);

            proxy.release();
            // Seen by the row's token, which the statement raised: the best-effort release of the failed acquisition runs
            // on a thread of its own and may land just after the statement, freeing the row before a look at its owner.
            awaitTrue(Duration.ofSeconds(10), "the held statement took the key's row",
                    () -> !tokenBefore.equals(queryValue(admin, TOKEN_OF, key)));
            long landedAt = System.nanoTime();
            Object orphan = queryValue(admin, OWNER_OF, key);

            LockRequest waiting = LockRequest.builder(key).leaseTime(LEASE).waitTime(LEASE.plusSeconds(5)).build();
            try (LockHandle taken = otherJvm.acquire(waiting)) {
                Duration after = Duration.ofNanos(System.nanoTime() - landedAt);
                assertThat(after).as("another JVM got key '%s' (taken for nobody by %s) %s ms after the late statement ran, "
                        + "with a %s ms lease", key, orphan, after.toMillis(), LEASE.toMillis()).isLessThan(FREED_WITHIN);
                assertThat(taken.isHeld()).isTrue();
            }
        }
    }
}
