package dev.dlock.bench;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import java.util.function.Function;

import com.zaxxer.hikari.HikariDataSource;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

import dev.dlock.core.LeaseLostPolicy;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.jdbc.PostgresServer;

/**
 * The JDBC store against ShedLock's JDBC provider and Spring Integration's {@code JdbcLockRegistry},
 * on one PostgreSQL server this harness starts, in alternating rounds: uncontended lock + unlock
 * pairs (a key per thread), hot-key hand-offs (every thread on one key), and the renewal statements
 * one watchdog round costs for 10,000 held leases. Each library runs with its defaults, over the same
 * pool; ShedLock does not wait, so its hot-key loop retries every millisecond.
 *
 * <p>{@code java -cp benchmarks/target/dlock-benchmarks.jar dev.dlock.bench.JdbcPeers [--quick]}
 */
public final class JdbcPeers {

    private static final Logger log = LoggerFactory.getLogger(JdbcPeers.class);
    private static final String HOT_KEY = "bench:hot";

    private JdbcPeers() {
    }

    /** Runs the comparison and prints Markdown tables. */
    public static void main(String[] args) throws Exception {
        boolean quick = List.of(args).contains("--quick");
        int rounds = quick ? 3 : 5;
        long roundMillis = quick ? 1_000 : 3_000;
        try (PostgresServer postgres = PostgresServer.start(); HikariDataSource pool = pool(postgres)) {
            createPeerTables(pool);
            JdbcLockBackend backend = JdbcLockBackend.builder(pool).createSchema(true).cleanupInterval(Duration.ZERO).build();
            LockManager dlock = LockManager.builder(backend).build();
            JdbcTemplateLockProvider shedLock = new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
                    .withJdbcTemplate(new JdbcTemplate(pool)).usingDbTime().build());
            DefaultLockRepository repository = new DefaultLockRepository(pool);
            repository.setTransactionManager(new DataSourceTransactionManager(pool));
            repository.afterPropertiesSet();
            repository.afterSingletonsInstantiated();
            JdbcLockRegistry registry = new JdbcLockRegistry(repository);

            List<String> names = List.of("dlock-jdbc", "shedlock-jdbc-template", "spring-integration-jdbc");
            List<Function<String, Object>> pairs = List.of(
                    key -> dlockPair(dlock, key), key -> shedLockPair(shedLock, key), key -> registryPair(registry, key));

            List<String> report = new ArrayList<>();
            report.add("## Uncontended lock + unlock pairs/s (a key per thread; median of " + rounds + " alternating rounds of "
                    + roundMillis + " ms)\n");
            report.add("| threads | " + String.join(" | ", names) + " |");
            report.add("|---|---|---|---|");
            for (int threads : new int[] {1, 8}) {
                InterleavedThroughput.Result result = InterleavedThroughput.measure(variants(names, pairs, Function.identity()),
                        threads, rounds, roundMillis);
                report.add("| " + threads + " | " + row(result) + " |");
            }

            report.add("\n## Hot-key hand-offs/s (8 threads on one key)\n");
            report.add("| threads | " + String.join(" | ", names) + " |");
            report.add("|---|---|---|---|");
            InterleavedThroughput.Result hot = InterleavedThroughput.measure(variants(names, pairs, key -> HOT_KEY), 8, rounds, roundMillis);
            report.add("| 8 | " + row(hot) + " |");

            report.add("\n## dlock-jdbc renewal statements per watchdog round, 10,000 held leases\n");
            report.add(renewalRound(postgres, pool));
            log.info("JDBC peers on PostgreSQL:\n{}", String.join("\n", report));

            dlock.close();
            backend.close();
            repository.close();
        }
    }

    private static List<InterleavedThroughput.Variant> variants(List<String> names, List<Function<String, Object>> pairs,
                                                               Function<String, String> keyOf) {
        List<InterleavedThroughput.Variant> variants = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            Function<String, Object> pair = pairs.get(i);
            variants.add(new InterleavedThroughput.Variant(names.get(i), key -> pair.apply(keyOf.apply(key))));
        }
        return variants;
    }

    private static String row(InterleavedThroughput.Result result) {
        List<String> cells = new ArrayList<>();
        for (int i = 0; i < result.medianOpsPerSecond().length; i++) {
            cells.add(String.format("%,.0f (%.2f×)", result.medianOpsPerSecond()[i], result.medianRatioToFirst()[i]));
        }
        return String.join(" | ", cells);
    }

    private static Object dlockPair(LockManager locks, String key) {
        try (LockHandle lock = locks.acquire(key, Duration.ofSeconds(60))) {
            return lock.fencingToken();
        }
    }

    private static Object shedLockPair(JdbcTemplateLockProvider provider, String key) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            Optional<SimpleLock> lock = provider.lock(new LockConfiguration(Instant.now(), key, Duration.ofSeconds(30), Duration.ZERO));
            if (lock.isPresent()) {
                lock.get().unlock();
                return key;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("shedlock: " + key + " not acquired within 60 s");
            }
            sleepOneMilli();
        }
    }

    private static Object registryPair(JdbcLockRegistry registry, String key) {
        Lock lock = registry.obtain(key);
        lock.lock();
        lock.unlock();
        return key;
    }

    /** Holds 10,000 watched leases (lease 9 s, so a round every 3 s) and counts the renew UPDATEs the server ran over 15 s. */
    /** Holds 10,000 leases for 15 s and reports the renewal statements PostgreSQL ran meanwhile. */
    private static String renewalRound(PostgresServer postgres, HikariDataSource pool) throws Exception {
        int leases = 10_000;
        String result;
        JdbcLockBackend backend = JdbcLockBackend.builder(pool).cleanupInterval(Duration.ZERO).build();
        try (LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofSeconds(9))
                .leaseLostPolicy(LeaseLostPolicy.LOG).build();
             Connection admin = postgres.admin(); Statement statement = admin.createStatement()) {
            statement.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            List<LockHandle> held = new ArrayList<>();
            for (int i = 0; i < leases; i++) {
                held.add(locks.acquire("held:" + i, Duration.ZERO).detachFromThread());
            }
            statement.execute("SELECT pg_stat_statements_reset()");
            long start = System.nanoTime();
            Thread.sleep(15_000);
            double seconds = (System.nanoTime() - start) / 1e9;
            long statements;
            try (ResultSet row = statement.executeQuery("SELECT COALESCE(SUM(calls), 0), COALESCE(SUM(rows), 0) FROM pg_stat_statements"
                    + " WHERE query LIKE 'UPDATE dlock_locks SET expires_at%'")) {
                row.next();
                statements = row.getLong(1);
                long renewed = row.getLong(2);
                double roundsRun = seconds / 3.0;
                result = String.format("%,d leases, lease 9 s (a round every 3 s), batch size 100: %,d renew statements renewed %,d leases"
                        + " in %.1f s: %.1f statements per round, %.0f leases per statement",
                        leases, statements, renewed, seconds, statements / roundsRun, (double) renewed / Math.max(1, statements));
            }
            held.forEach(LockHandle::close);
        } finally {
            backend.close();
        }
        return result;
    }

    private static void createPeerTables(HikariDataSource pool) throws SQLException {
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE shedlock (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL,"
                    + " locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))");
            statement.execute("CREATE TABLE INT_LOCK (LOCK_KEY CHAR(36) NOT NULL, REGION VARCHAR(100) NOT NULL,"
                    + " CLIENT_ID CHAR(36), CREATED_DATE TIMESTAMP NOT NULL, EXPIRED_AFTER TIMESTAMP NOT NULL,"
                    + " CONSTRAINT INT_LOCK_PK PRIMARY KEY (LOCK_KEY, REGION))");
        }
    }

    private static HikariDataSource pool(PostgresServer postgres) {
        HikariDataSource pool = new HikariDataSource();
        pool.setJdbcUrl(postgres.jdbcUrl());
        pool.setUsername("postgres");
        pool.setMaximumPoolSize(20);
        pool.setConnectionTimeout(5_000);
        return pool;
    }

    private static void sleepOneMilli() {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
