package dev.dlock.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.testkit.ServerExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A section blocked in a JDBC call (PostgreSQL's {@code pg_sleep}) on the PostgreSQL store, stopped when its lease is
 * lost to another JVM's forced release: the interrupt alone does not reach a driver blocked in a socket read on a
 * platform thread, so the section arms {@code statement::cancel} as its loss reaction, and the call ends with
 * PostgreSQL's cancellation long before its minute.
 */
class StopWorkInAJdbcCallTest {

    @RegisterExtension
    static final ServerExtension<PostgresServer> POSTGRES = new ServerExtension<>("PostgreSQL server", PostgresServer::start);

    private static String connection;

    @BeforeAll
    static void schema() {
        connection = PostgresContractTest.connectionOf(POSTGRES.server());
        PostgresContractTest.createSchema(connection);
    }

    @Test
    void aStatementCancelledAsTheLossReactionEndsTheCallAndTheReleaseReportsTheLoss() throws Exception {
        JdbcBackendFactory factory = new JdbcBackendFactory();
        var holderStore = factory.create(connection);
        var operatorStore = factory.create(connection);
        String key = "jdbc-call:" + UUID.randomUUID();
        try (HikariDataSource work = JdbcBackendFactory.pool(connection, 1);
             LockManager locks = LockManager.builder(holderStore).leaseTime(Duration.ofSeconds(3)).build();
             LockManager operator = LockManager.builder(operatorStore).build()) {
            CountDownLatch inCall = new CountDownLatch(1);
            CompletableFuture<String> seen = new CompletableFuture<>();
            AtomicReference<String> inside = new AtomicReference<>("not run");
            long[] calledAt = new long[1];
            Thread holder = new Thread(() -> {
                String release;
                try (LockHandle held = locks.acquire(LockRequest.builder(key).stopWorkOnLeaseLost(true).build())) {
                    try (Connection db = work.getConnection(); Statement statement = db.createStatement()) {
                        held.onLeaseLost(() -> cancelQuietly(statement));
                        calledAt[0] = System.nanoTime();
                        inCall.countDown();
                        statement.execute("SELECT pg_sleep(60)");
                        inside.set("the call ran its minute");
                    } catch (SQLException e) {
                        inside.set("the call ended: " + e.getSQLState());
                    }
                    release = "release went through";
                } catch (LockLostException e) {
                    release = "release reported the loss";
                }
                seen.complete(release);
            }, "jdbc-holder");
            holder.setDaemon(true);
            holder.start();
            assertThat(inCall.await(10, TimeUnit.SECONDS)).isTrue();
            // Until PostgreSQL runs the statement: a cancel that came before it would find nothing to cancel.
            awaitRunning(work);

            assertThat(operator.admin().forceRelease(key)).hasSize(1);

            assertThat(seen.get(20, TimeUnit.SECONDS)).isEqualTo("release reported the loss");
            holder.join(10_000);
            // 57014: query_canceled.
            assertThat(inside.get()).isEqualTo("the call ended: 57014");
            assertThat(Duration.ofNanos(System.nanoTime() - calledAt[0])).as("far short of the call's minute")
                    .isLessThan(Duration.ofSeconds(30));
        } finally {
            factory.dispose(holderStore);
            factory.dispose(operatorStore);
        }
    }

    private static void cancelQuietly(Statement statement) {
        try {
            statement.cancel();
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void awaitRunning(HikariDataSource pool) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        try (Connection admin = POSTGRES.server().admin()) {
            while (true) {
                try (var rows = admin.createStatement().executeQuery(
                        "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)' AND state = 'active'")) {
                    rows.next();
                    if (rows.getLong(1) > 0) {
                        return;
                    }
                }
                assertThat(System.nanoTime() - deadline).as("pg_sleep running").isNegative();
                Thread.sleep(20);
            }
        }
    }
}
