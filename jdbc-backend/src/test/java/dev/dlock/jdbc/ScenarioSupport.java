package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Collections;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;

import com.zaxxer.hikari.HikariDataSource;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.testkit.RecordingBackend;

import static org.assertj.core.api.Assertions.assertThat;

/** Backends, managers and event records for the scenario tests; closes what it made. */
final class ScenarioSupport implements AutoCloseable {

    private final String connection;
    private final JdbcBackendFactory factory = new JdbcBackendFactory();
    private final List<LockManager> managers = new ArrayList<>();
    private final List<LockBackend> backends = new ArrayList<>();

    ScenarioSupport(String connection) {
        this.connection = connection;
    }

    /** A fresh backend with its own pool, as another process would have. */
    RecordingBackend backend() {
        LockBackend backend = factory.create(connection);
        backends.add(backend);
        return new RecordingBackend(backend);
    }

    LockManager manager(LockBackend backend, Consumer<LockManager.Builder> config) {
        LockManager.Builder builder = LockManager.builder(backend);
        config.accept(builder);
        LockManager manager = builder.build();
        managers.add(manager);
        return manager;
    }

    LockManager manager() {
        return manager(backend(), b -> { });
    }

    @Override
    public void close() {
        managers.forEach(LockManager::close);
        backends.forEach(factory::dispose);
    }

    /** Every renewal outcome and lease loss a manager reports, in order. */
    static final class Events implements LockListener {
        final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
            events.add(outcome.name());
        }

        @Override
        public void onLeaseLost(String lockName, String key, String reason) {
            events.add("LOST: " + reason);
        }

        boolean lost() {
            return events.stream().anyMatch(event -> event.startsWith("LOST"));
        }

        /** How many events were recorded so far. */
        int count() {
            return events.size();
        }

        /** True once a renewal succeeded after the first {@code before} events. */
        boolean renewedAfter(int before) {
            return events.subList(before, events.size()).contains("RENEWED");
        }
    }

    /** Polls {@code condition} every 20 ms until it holds; fails after {@code timeout}. */
    static void awaitTrue(Duration timeout, String what, BooleanSupplier condition) {
        awaitTrue(timeout, () -> what, condition);
    }

    /** Polls {@code condition} every 20 ms until it holds; fails after {@code timeout}, saying {@code what} as it is then. */
    static void awaitTrue(Duration timeout, Supplier<String> what, BooleanSupplier condition) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError(what.get() + ": not within " + timeout);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted", e);
            }
        }
    }

    /** The first column of the first row of {@code sql} with {@code parameter}, or null when there is no row. */
    static Object queryValue(Connection connection, String sql, Object parameter) {
        try (PreparedStatement statement = connection.prepareStatement(sql)) {
            if (parameter != null) {
                statement.setObject(1, parameter);
            }
            try (ResultSet row = statement.executeQuery()) {
                return row.next() ? row.getObject(1) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException(sql, e);
        }
    }

    /** How the connection-kill scenario finds and ends the session whose renewal waits on a row lock. */
    interface SessionKiller {
        /** The id of the session running the blocked renewal, or null while there is none. */
        Object blockedRenewal(Connection admin) throws SQLException;

        /** Ends that session from the server side. */
        void kill(Connection admin, Object session) throws SQLException;
    }

    /**
     * Holds a key with a 3 s watched lease, blocks its next renewal on a row lock taken by an admin
     * transaction, kills the renewing session from the server side and lets go: the failed call is
     * retried on a fresh connection, the lease is renewed and never reported lost, and the key stays held.
     */
    static void connectionKilledMidRenewal(String connection, JdbcContractHooks.Admin adminConnections,
                                           String rowLockSql, SessionKiller killer) throws Exception {
        try (ScenarioSupport support = new ScenarioSupport(connection)) {
            String key = "killed-mid-renewal:" + System.nanoTime();
            Events events = new Events();
            LockManager holder = support.manager(support.backend(), b -> b.leaseTime(Duration.ofSeconds(3)).listener(events));
            LockManager other = support.manager();
            try (var lock = holder.acquire(key, Duration.ZERO)) {
                try (Connection admin = adminConnections.open(); Connection observer = adminConnections.open()) {
                    admin.setAutoCommit(false);
                    assertThat(queryValue(admin, rowLockSql, key)).as("row locked").isNotNull();
                    Object[] session = new Object[1];
                    awaitTrue(Duration.ofSeconds(5), "a renewal waits on the row lock", () -> {
                        try {
                            session[0] = killer.blockedRenewal(observer);
                            return session[0] != null;
                        } catch (SQLException e) {
                            throw new IllegalStateException(e);
                        }
                    });
                    int before = events.count();
                    killer.kill(observer, session[0]);
                    admin.rollback();
                    // The watchdog retries a failed call at once on a fresh connection: the kill costs no lease.
                    awaitTrue(Duration.ofSeconds(10), () -> "renewed after the killed renewal; events " + events.events,
                            () -> events.renewedAfter(before));
                }
                assertThat(events.lost()).as("no lease lost: %s", events.events).isFalse();
                assertThat(lock.isHeld()).isTrue();
                assertThat(other.tryAcquire(key)).as("still held in the database").isEmpty();
            }
            assertThat(other.tryAcquire(key)).as("released normally").isPresent().get().satisfies(h -> h.close());
        }
    }

    /**
     * Holds a key with a 10 s watched lease while {@code restart} kills and restarts the database: a
     * renewal succeeds after the restart, no loss is reported, the row survived, and the next holder's
     * token is larger than the one before the restart.
     */
    static void restartShorterThanTheLeaseKeepsTheLock(String connection, Runnable restart) {
        try (ScenarioSupport support = new ScenarioSupport(connection)) {
            String key = "restart-hold:" + System.nanoTime();
            Events events = new Events();
            LockManager holder = support.manager(support.backend(), b -> b.leaseTime(Duration.ofSeconds(10)).listener(events));
            LockManager other = support.manager();
            long token;
            try (LockHandle lock = holder.acquire(key, Duration.ZERO)) {
                token = lock.fencingToken();
                restart.run();
                int before = events.count();
                awaitTrue(Duration.ofSeconds(15), () -> "a renewal succeeded after the restart; " + events.events,
                        () -> events.renewedAfter(before));
                assertThat(events.lost()).as("no loss: %s", events.events).isFalse();
                assertThat(lock.isHeld()).isTrue();
                assertThat(other.tryAcquire(key)).as("the row survived the restart").isEmpty();
            }
            try (LockHandle next = other.acquire(key, Duration.ofSeconds(5))) {
                assertThat(next.fencingToken()).as("tokens never go back, restarts included").isGreaterThan(token);
            }
        }
    }

    /**
     * Cleanup deletes a row only when it has been free for longer than the retention ({@code ageFreeRows}
     * makes a key's free row look two hours old): a held row and a row released just now stay, and the
     * next acquisition of a deleted key still gets a larger token than the last one it had.
     */
    static void cleanupDeletesOnlyLongIdleRows(String connection, JdbcContractHooks.Admin adminConnections,
                                               String ageFreeRows) throws Exception {
        try (HikariDataSource pool = JdbcBackendFactory.pool(connection, 4);
             JdbcLockBackend backend = JdbcBackendFactory.builder(connection, pool).cleanupInterval(Duration.ZERO).build();
             LockManager locks = LockManager.builder(backend).build();
             Connection admin = adminConnections.open()) {
            String idle = "sweep-idle:" + System.nanoTime();
            String fresh = "sweep-fresh:" + System.nanoTime();
            String held = "sweep-held:" + System.nanoTime();
            long lastToken = 0;
            for (int i = 0; i < 5; i++) {
                try (LockHandle lock = locks.acquire(idle, Duration.ZERO)) {
                    lastToken = lock.fencingToken();
                }
            }
            locks.acquire(fresh, Duration.ZERO).close();
            LockHandle holding = locks.acquire(held, Duration.ZERO);
            try (PreparedStatement age = admin.prepareStatement(ageFreeRows)) {
                age.setString(1, idle);
                assertThat(age.executeUpdate()).isEqualTo(1);
            }

            assertThat(backend.cleanUp()).isGreaterThanOrEqualTo(1);
            String count = "SELECT COUNT(*) FROM dlock_locks WHERE lock_key = ?";
            assertThat(((Number) queryValue(admin, count, idle)).longValue()).as("idle for two hours").isZero();
            assertThat(((Number) queryValue(admin, count, fresh)).longValue()).as("released within the retention").isEqualTo(1);
            assertThat(((Number) queryValue(admin, count, held)).longValue()).as("held").isEqualTo(1);
            try (LockHandle again = locks.acquire(idle, Duration.ZERO)) {
                assertThat(again.fencingToken()).as("a per-row counter would restart at 1 here").isGreaterThan(lastToken);
            }
            holding.close();
        }
    }

    /**
     * Eight threads on two backends take one key over and over while a sweeper ages the key's free row
     * and runs cleanup, with acquire statements in flight: ageing a row by hours makes it deletable at
     * once, as if every statement in flight had outlived the retention. The row is deleted and re-created
     * many times (each thread goes on past its 150 holds until it was deleted more than ten times), and
     * the key's fencing tokens, logged inside the critical section, still only go up, with no overlap.
     */
    static void tokensKeepRisingWhileCleanupDeletesTheRow(String connection, JdbcContractHooks.Admin adminConnections,
                                                          String ageFreeRows) throws Exception {
        try (HikariDataSource firstPool = JdbcBackendFactory.pool(connection, 8);
             HikariDataSource secondPool = JdbcBackendFactory.pool(connection, 8);
             JdbcLockBackend first = JdbcBackendFactory.builder(connection, firstPool).cleanupInterval(Duration.ZERO).build();
             JdbcLockBackend second = JdbcBackendFactory.builder(connection, secondPool).cleanupInterval(Duration.ZERO).build();
             LockManager firstLocks = LockManager.builder(first).build();
             LockManager secondLocks = LockManager.builder(second).build();
             Connection admin = adminConnections.open()) {
            String key = "sweep-race:" + System.nanoTime();
            OverlapDetector detector = new OverlapDetector();
            List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
            AtomicBoolean contending = new AtomicBoolean(true);
            AtomicInteger deletions = new AtomicInteger();
            Thread sweeper = new Thread(() -> {
                try (PreparedStatement age = admin.prepareStatement(ageFreeRows)) {
                    age.setString(1, key);
                    while (contending.get()) {
                        age.executeUpdate();
                        deletions.addAndGet(first.cleanUp());
                    }
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            sweeper.start();
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    LockManager locks = t % 2 == 0 ? firstLocks : secondLocks;
                    done.add(pool.submit(() -> {
                        for (int i = 0; i < 150 || deletions.get() <= 10; i++) {
                            try (LockHandle lock = locks.acquire(key, Duration.ofSeconds(30))) {
                                detector.enter();
                                tokens.add(lock.fencingToken());
                                detector.incrementUnsafely();
                                detector.exit();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get(2, TimeUnit.MINUTES);
                }
            } finally {
                contending.set(false);
                pool.shutdownNow();
                sweeper.join(10_000);
            }
            assertThat(deletions.get()).as("the key's row was deleted between holds").isGreaterThan(10);
            assertThat(detector.overlaps()).isZero();
            assertThat(detector.counter()).isEqualTo(tokens.size()).isGreaterThanOrEqualTo(8 * 150);
            for (int i = 1; i < tokens.size(); i++) {
                assertThat(tokens.get(i)).as("token %d of %d", i, tokens.size()).isGreaterThan(tokens.get(i - 1));
            }
        }
    }
}
