package dev.dlock.jdbc;

import dev.dlock.core.LockKind;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.testkit.RecordingBackend;
import dev.dlock.testkit.ServerExtension;

import static dev.dlock.jdbc.ScenarioSupport.awaitTrue;
import static dev.dlock.jdbc.ScenarioSupport.queryValue;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a database adds to the contract, on a PostgreSQL server of this class: the database's clock
 * is the only one, restarts during a hold and a wait, a session killed mid-renewal, and idle-row
 * cleanup that never lowers a fencing token.
 */
class PostgresScenarioTest {

    /** Makes the free rows of a key look released two hours ago. */
    private static final String AGE_FREE_ROWS =
            "UPDATE dlock_locks SET expires_at = expires_at - INTERVAL '2 hours' WHERE lock_key = ? AND owner IS NULL";

    @RegisterExtension
    static final ServerExtension<PostgresServer> POSTGRES = new ServerExtension<>("PostgreSQL server", PostgresServer::start);

    private static PostgresServer postgres;

    @BeforeAll
    static void prepareServer() {
        postgres = POSTGRES.server();
        PostgresContractTest.createSchema(connection());
    }

    private static String connection() {
        return PostgresContractTest.connectionOf(postgres);
    }

    /**
     * In database {@code skewed} the database's clock runs ten minutes behind the clocks of the JVMs
     * (a function {@code skew.clock_timestamp()} shadows the built-in one through the search path),
     * which is the same as two application servers whose clocks are ten minutes ahead. Using a JVM's
     * clock anywhere fails one assertion: an expiry computed by the JVM would not sit ten minutes
     * behind the JVM's clock; an expiry compared with the JVM's clock would let the second client steal
     * the live lock; and an expiry written by the JVM but compared by the database would keep the key
     * ten minutes instead of three seconds.
     */
    @Test
    void onlyTheDatabaseClockCountsSoClientsMinutesAheadCannotStealALiveLock() throws Exception {
        try (Connection admin = postgres.admin(); Statement statement = admin.createStatement()) {
            statement.execute("CREATE DATABASE skewed");
        }
        String skewedUrl = postgres.jdbcUrl().replace("/postgres", "/skewed");
        try (Connection admin = DriverManager.getConnection(skewedUrl, "postgres", ""); Statement statement = admin.createStatement()) {
            statement.execute("CREATE SCHEMA skew");
            statement.execute("CREATE FUNCTION skew.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE"
                    + " AS $$ SELECT pg_catalog.clock_timestamp() - INTERVAL '10 minutes' $$");
            statement.execute("ALTER DATABASE skewed SET search_path = skew, pg_catalog, public");
        }
        String skewed = JdbcBackendFactory.connection(skewedUrl, "postgres", "");
        PostgresContractTest.createSchema(skewed);
        try (ScenarioSupport support = new ScenarioSupport(skewed);
             Connection admin = DriverManager.getConnection(skewedUrl, "postgres", "")) {
            String key = "skew:" + System.nanoTime();
            LockManager first = support.manager();
            RecordingBackend secondBackend = support.backend();
            LockManager second = support.manager(secondBackend, b -> { });
            long start = System.nanoTime();
            LockHandle lock = first.acquire(LockRequest.builder(key).leaseTime(Duration.ofSeconds(3)).waitTime(Duration.ZERO).build());

            long expiresAtMillis = ((Number) queryValue(admin,
                    "SELECT CAST(EXTRACT(EPOCH FROM expires_at) * 1000 AS BIGINT) FROM dlock_locks WHERE lock_key = ?", key)).longValue();
            Duration behindJvm = Duration.between(Instant.ofEpochMilli(expiresAtMillis), Instant.now());
            assertThat(behindJvm).as("the expiry is the database's now + 3 s, minutes behind the JVM's clock")
                    .isBetween(Duration.ofMinutes(9), Duration.ofMinutes(10));

            assertThat(second.tryAcquire(key)).as("live by the database's clock, long expired by the JVM's").isEmpty();
            AcquireResult answer = secondBackend.tryAcquire(LockKind.EXCLUSIVE, key, "other-owner", 1_000);
            assertThat(answer).isInstanceOfSatisfying(AcquireResult.Held.class,
                    held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 3_000L));

            Optional<LockHandle>[] taken = new Optional[] {Optional.empty()};
            awaitTrue(Duration.ofSeconds(10), "the lease runs out by the database's clock",
                    () -> (taken[0] = second.tryAcquire(key)).isPresent());
            assertThat(System.nanoTime() - start).as("not before the 3 s lease ran out").isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(2_900));
            assertThat(taken[0].get().fencingToken()).isGreaterThan(lock.fencingToken());
            taken[0].get().close();
        }
    }

    @Test
    void aRestartShorterThanTheLeaseKeepsTheLockAndItsRenewals() {
        try (ScenarioSupport support = new ScenarioSupport(connection())) {
            String key = "restart-hold:" + System.nanoTime();
            ScenarioSupport.Events events = new ScenarioSupport.Events();
            LockManager holder = support.manager(support.backend(), b -> b.leaseTime(Duration.ofSeconds(10)).listener(events));
            LockManager other = support.manager();
            long token;
            try (LockHandle lock = holder.acquire(key, Duration.ZERO)) {
                token = lock.fencingToken();
                postgres.crash();
                postgres.launch();
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

    /**
     * A crash during a wait ends the wait with a backend error (the contract); after the restart the
     * same backend listens again, so a new waiter is woken by the release at once, not by the holder's
     * lease running out (about 30 s), and the holder kept its lock throughout.
     */
    @Test
    void aRestartDuringAWaitEndsItWithAnErrorAndTheBackendListensAgainAfterwards() throws Exception {
        try (ScenarioSupport support = new ScenarioSupport(connection())) {
            String key = "restart-wait:" + System.nanoTime();
            LockManager holder = support.manager();
            RecordingBackend waiterBackend = support.backend();
            LockManager waiter = support.manager(waiterBackend, b -> { });
            LockHandle lock = holder.acquire(key, Duration.ZERO);
            AtomicReference<Throwable> firstOutcome = new AtomicReference<>();
            Thread firstWaiter = new Thread(() -> {
                try {
                    waiter.acquire(key, Duration.ofSeconds(40)).close();
                } catch (Throwable t) {
                    firstOutcome.set(t);
                }
            });
            firstWaiter.start();
            awaitTrue(Duration.ofSeconds(10), "the waiter subscribed", () -> waiterBackend.heldAnswers.get() >= 2);
            postgres.crash();
            firstWaiter.join(20_000);
            assertThat(firstWaiter.isAlive()).as("the wait ended").isFalse();
            assertThat(firstOutcome.get()).isInstanceOf(LockBackendException.class);
            postgres.launch();

            AtomicLong acquiredAt = new AtomicLong();
            Thread secondWaiter = new Thread(() -> {
                try (LockHandle next = waiter.acquire(key, Duration.ofSeconds(40))) {
                    acquiredAt.set(System.nanoTime());
                }
            });
            int answers = waiterBackend.heldAnswers.get();
            secondWaiter.start();
            awaitTrue(Duration.ofSeconds(15), "the second waiter subscribed", () -> waiterBackend.heldAnswers.get() >= answers + 2);
            assertThat(lock.isHeld()).as("the holder kept the lock through the restart").isTrue();
            long releasedAt = System.nanoTime();
            lock.close();
            secondWaiter.join(30_000);
            assertThat(acquiredAt.get()).as("second waiter acquired").isNotZero();
            assertThat(acquiredAt.get() - releasedAt).isLessThan(TimeUnit.SECONDS.toNanos(5));
        }
    }

    @Test
    void everySubscriberHearsOnceWhenTheConnectionIsLostAndOnceAfterTheReconnect() throws Exception {
        try (ScenarioSupport support = new ScenarioSupport(connection())) {
            RecordingBackend backend = support.backend();
            ReleaseNotices notices = backend.capabilities().releaseNotices().orElseThrow();
            AtomicInteger firstCalls = new AtomicInteger();
            AtomicInteger secondCalls = new AtomicInteger();
            String firstKey = "notices-a:" + System.nanoTime();
            ReleaseNotices.Subscription first = notices.subscribe(firstKey, firstCalls::incrementAndGet);
            ReleaseNotices.Subscription second = notices.subscribe("notices-b:" + System.nanoTime(), secondCalls::incrementAndGet);
            assertThat(first.awaitActive(Duration.ofSeconds(5)) && second.awaitActive(Duration.ofSeconds(5))).isTrue();
            postgres.crash();
            awaitTrue(Duration.ofSeconds(10), "told of the loss", () -> firstCalls.get() == 1 && secondCalls.get() == 1);
            assertThat(first.isActive()).isFalse();
            postgres.launch();
            assertThat(first.awaitActive(Duration.ofSeconds(15)) && second.awaitActive(Duration.ofSeconds(15))).as("re-listened").isTrue();
            awaitTrue(Duration.ofSeconds(5), "told once after the reconnect", () -> firstCalls.get() == 2 && secondCalls.get() == 2);
            LockManager locks = support.manager();
            locks.acquire(firstKey, Duration.ZERO).close();
            awaitTrue(Duration.ofSeconds(5), "a release is heard on the new connection", () -> firstCalls.get() == 3);
            assertThat(secondCalls).as("no extra calls for the other key").hasValue(2);
            first.close();
            second.close();
        }
    }

    @Test
    void aSessionTerminatedMidRenewalIsARenewalErrorAndTheNextRenewalKeepsTheLock() throws Exception {
        ScenarioSupport.connectionKilledMidRenewal(connection(), postgres::admin,
                "SELECT 1 FROM dlock_locks WHERE lock_key = ? FOR UPDATE",
                new ScenarioSupport.SessionKiller() {
                    @Override
                    public Object blockedRenewal(Connection admin) {
                        return queryValue(admin, "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                + " AND query LIKE 'UPDATE dlock_locks SET expires_at%'", null);
                    }

                    @Override
                    public void kill(Connection admin, Object session) {
                        assertThat(queryValue(admin, "SELECT pg_terminate_backend(?)", session)).isEqualTo(Boolean.TRUE);
                    }
                });
    }

    /**
     * An acquire stalls inside its own statement — waiting on an uncommitted row of the key, then its
     * server process stopped (SIGSTOP) — while another client takes the key, releases it, and cleanup
     * deletes the row once it has been free past the retention (ageing stands in for the hour). When the
     * stalled statement goes on, the key is free and it may take it, but its fencing token must still be
     * larger than the one the other client already used: a token drawn before the stall would not be.
     */
    @Test
    void anAcquireStalledInItsStatementPastTheRetentionStillGetsATokenAboveTheHolderBeforeIt() throws Exception {
        String key = "stalled-acquire:" + System.nanoTime();
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try (HikariDataSource stalledPool = JdbcBackendFactory.pool(connection(), 2);
             HikariDataSource otherPool = JdbcBackendFactory.pool(connection(), 2);
             // The longest query timeout: the driver's cancel must not end the stalled statement during the test.
             JdbcLockBackend stalled = JdbcLockBackend.builder(stalledPool).queryTimeout(Duration.ofSeconds(30))
                     .cleanupInterval(Duration.ZERO).build();
             JdbcLockBackend other = JdbcLockBackend.builder(otherPool).cleanupInterval(Duration.ZERO).build();
             Connection blocker = postgres.admin();
             Connection observer = postgres.admin()) {
            blocker.setAutoCommit(false);
            try (PreparedStatement insert = blocker.prepareStatement(
                    "INSERT INTO dlock_locks (lock_key, owner, token, expires_at) VALUES (?, 'blocker', 0, clock_timestamp())")) {
                insert.setString(1, key);
                insert.executeUpdate();
            }
            Object blockerPid = queryValue(blocker, "SELECT pg_backend_pid()", null);
            Future<AcquireResult> stalledAcquire = caller.submit(() -> stalled.tryAcquire(LockKind.EXCLUSIVE, key, "stalled-owner", 60_000));
            Object[] stalledPid = new Object[1];
            awaitTrue(Duration.ofSeconds(10), "the acquire statement waits on the uncommitted row", () -> (stalledPid[0] = queryValue(
                    observer, "SELECT pid FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", blockerPid)) != null);
            long earlierToken;
            ServerProcesses.signal("STOP", ((Number) stalledPid[0]).longValue());
            try {
                blocker.rollback();
                AcquireResult earlier = other.tryAcquire(LockKind.EXCLUSIVE, key, "earlier-owner", 60_000);
                assertThat(earlier).as("the key is free while the other acquire is stalled").isInstanceOf(AcquireResult.Acquired.class);
                earlierToken = ((AcquireResult.Acquired) earlier).fencingToken();
                assertThat(other.release(LockKind.EXCLUSIVE, key, "earlier-owner", earlierToken)).isEqualTo(ReleaseResult.RELEASED);
                try (PreparedStatement age = observer.prepareStatement(AGE_FREE_ROWS)) {
                    age.setString(1, key);
                    assertThat(age.executeUpdate()).isEqualTo(1);
                }
                other.cleanUp();
                assertThat(((Number) queryValue(observer, "SELECT COUNT(*) FROM dlock_locks WHERE lock_key = ?", key)).longValue())
                        .as("cleanup deleted the key's row").isZero();
            } finally {
                ServerProcesses.signal("CONT", ((Number) stalledPid[0]).longValue());
            }
            AcquireResult late = stalledAcquire.get(30, TimeUnit.SECONDS);
            assertThat(late).as("the key was free when the stalled statement went on").isInstanceOf(AcquireResult.Acquired.class);
            assertThat(((AcquireResult.Acquired) late).fencingToken())
                    .as("the stalled acquisition's token against the earlier holder's %d", earlierToken).isGreaterThan(earlierToken);
            assertThat(queryValue(observer, "SELECT owner FROM dlock_locks WHERE lock_key = ?", key)).isEqualTo("stalled-owner");
        } finally {
            caller.shutdownNow();
        }
    }

    @Test
    void cleanupDeletesOnlyLongIdleRowsAndTheNextTokenOfADeletedKeyIsStillLarger() throws Exception {
        ScenarioSupport.cleanupDeletesOnlyLongIdleRows(connection(), postgres::admin, AGE_FREE_ROWS);
    }

    @Test
    void tokensOfAKeyKeepRisingWhileCleanupDeletesItsRowBetweenHolds() throws Exception {
        ScenarioSupport.tokensKeepRisingWhileCleanupDeletesTheRow(connection(), postgres::admin, AGE_FREE_ROWS);
    }
}
