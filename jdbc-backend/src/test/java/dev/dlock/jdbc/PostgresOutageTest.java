package dev.dlock.jdbc;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.FutureTask;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.testkit.ThreadWaits;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * With PostgreSQL down, a lock call fails within the documented bound: the longest of the pool's connection timeout,
 * the query timeout plus 2 s (the network timeout) and, on PostgreSQL, the query timeout plus the driver's
 * {@code cancelSignalTimeout} (pgjdbc cancels a timed-out statement over a new connection and the statement waits for
 * that cancel) — one wait, not one for the statement and another for the best-effort release after it, which used to
 * run on the caller's thread. Real faults on the test's own server: every process stopped (SIGSTOP: open connections
 * stay open and nothing answers), or the server crashed ({@code pg_ctl stop -m immediate}: connections cut, the port
 * closed). The JDBC URL sets {@code cancelSignalTimeout=2}, as docs/jdbc.md advises.
 */
class PostgresOutageTest {

    private static final Logger log = LoggerFactory.getLogger(PostgresOutageTest.class);

    private static final Duration CONNECTION_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(2);
    private static final Duration CANCEL_SIGNAL_TIMEOUT = Duration.ofSeconds(2);
    /** The documented bound: max(connection timeout, query timeout + max(2 s, cancelSignalTimeout)). */
    private static final Duration BOUND = max(CONNECTION_TIMEOUT, QUERY_TIMEOUT.plus(max(Duration.ofSeconds(2), CANCEL_SIGNAL_TIMEOUT)));
    /** For a loaded machine: less than the 4 s or more that a second wait for the pool adds. */
    private static final Duration MARGIN = Duration.ofMillis(2_500);

    private PostgresServer postgres;
    private HikariDataSource pool;
    private JdbcLockBackend backend;
    private LockManager locks;

    @BeforeEach
    void start() {
        postgres = PostgresServer.start();
        String connection = JdbcBackendFactory.connection(postgres.jdbcUrl() + "?cancelSignalTimeout="
                + CANCEL_SIGNAL_TIMEOUT.toSeconds(), "postgres", "");
        PostgresContractTest.createSchema(connection);
        pool = JdbcBackendFactory.pool(connection, 4);
        pool.setConnectionTimeout(CONNECTION_TIMEOUT.toMillis());
        backend = JdbcLockBackend.builder(pool).queryTimeout(QUERY_TIMEOUT).cleanupInterval(Duration.ZERO).build();
        locks = LockManager.builder(backend).build();
    }

    @AfterEach
    void stop() {
        try {
            if (locks != null) {
                locks.close();
            }
            if (backend != null) {
                backend.close();
            }
            if (pool != null) {
                pool.close();
            }
        } finally {
            if (postgres != null) {
                postgres.close();
            }
        }
    }

    /** A server that stops answering on a connection the call already has: the statement's network timeout, once. */
    @Test
    void aStoppedServerFailsTheCallWithinTheBound() {
        warmUp();
        postgres.signalAll("STOP");
        try {
            assertFailsWithinTheBound("stopped");
        } finally {
            postgres.signalAll("CONT");
        }
        assertThat(worksAgainWithin(Duration.ofSeconds(30))).as("a call works again once the server runs").isTrue();
    }

    /** A crashed server: connections cut, nothing listens; the pool gives up after its connection timeout, once. */
    @Test
    void aCrashedServerFailsTheCallWithinTheBound() {
        warmUp();
        postgres.crash();
        assertFailsWithinTheBound("crashed");
        postgres.launch();
        assertThat(worksAgainWithin(Duration.ofSeconds(30))).as("a call works again once the server is back").isTrue();
    }

    /**
     * A waiter whose key's notices cannot come up while the server is stopped waits on a {@code java.util.concurrent}
     * condition, holding no monitor (a monitor wait pins a virtual thread to its carrier on JDK 21 to 23), and hears
     * its channel come up once the server runs again.
     */
    @Test
    void aWaiterForNoticesWhileTheServerIsStoppedHoldsNoMonitor() throws Exception {
        ReleaseNotices notices = backend.capabilities().releaseNotices().orElseThrow();
        try (ReleaseNotices.Subscription warm = notices.subscribe("warm", () -> { })) {
            assertThat(warm.awaitActive(Duration.ofSeconds(30))).as("the notice connection listens").isTrue();
            ReleaseNotices.Subscription late;
            FutureTask<Boolean> cameUp;
            postgres.signalAll("STOP");
            try {
                late = notices.subscribe("late", () -> { });
                cameUp = new FutureTask<>(() -> late.awaitActive(Duration.ofSeconds(120)));
                Thread waiter = new Thread(cameUp, "waiting-for-its-channel");
                waiter.start();
                ThreadWaits.assertWaitsHoldingNoMonitor(ThreadWaits.awaitTimedWaiting(waiter, Duration.ofSeconds(30)));
            } finally {
                postgres.signalAll("CONT");
            }
            assertThat(cameUp.get(120, TimeUnit.SECONDS)).as("the channel came up once the server ran again").isTrue();
            late.close();
        }
    }

    /** A call just before the fault, so the pool hands out a connection it does not validate first. */
    private void warmUp() {
        try (LockHandle lock = locks.acquire("warm-up", Duration.ZERO)) {
            assertThat(lock.isHeld()).isTrue();
        }
    }

    private void assertFailsWithinTheBound(String fault) {
        long start = System.nanoTime();
        assertThatThrownBy(() -> locks.acquire("outage-" + fault, Duration.ZERO)).isInstanceOf(LockBackendException.class);
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        log.info("A call to a {} server failed after {}", fault, took);
        assertThat(took).as("a call to a %s server: the bound is %s (pool %s, query %s, cancel signal %s)", fault, BOUND,
                CONNECTION_TIMEOUT, QUERY_TIMEOUT, CANCEL_SIGNAL_TIMEOUT).isLessThan(BOUND.plus(MARGIN));
    }

    private boolean worksAgainWithin(Duration time) {
        long deadline = System.nanoTime() + time.toNanos();
        while (System.nanoTime() - deadline < 0) {
            try (LockHandle lock = locks.acquire("after-" + System.nanoTime(), Duration.ZERO)) {
                return lock.isHeld();
            } catch (LockBackendException e) {
                sleep(200);
            }
        }
        return false;
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }

    private static void sleep(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
