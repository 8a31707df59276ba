package dev.dlock.fencing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.aspect.EnableDistributedLocks;
import dev.dlock.aspect.LockContext;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.StaleFencingTokenException;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.testkit.PausedHolder;

import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import jakarta.persistence.PersistenceConfiguration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The fencing guards against one database, with the JDBC lock store on that same database as the lock:
 * in each scenario a holder is paused (blocked on a latch) past its fixed lease, a second instance takes
 * the key and writes through the guard, and the first one's late write is refused.
 */
abstract class FencingGuardsContract {

    private static final Duration LEASE = Duration.ofMillis(200);

    private final List<AutoCloseable> resources = new ArrayList<>();
    private HikariDataSource data;
    private JdbcTemplate jdbc;

    /** The database's JDBC URL. */
    abstract String jdbcUrl();

    /** The database user. */
    abstract String user();

    @BeforeEach
    void createTables() {
        data = pool();
        jdbc = new JdbcTemplate(data);
        jdbc.execute("DROP TABLE IF EXISTS fenced_account");
        jdbc.execute("CREATE TABLE fenced_account (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL)");
        jdbc.update("INSERT INTO fenced_account (id, balance, fence_token) VALUES (1, 0, 0)");
        jdbc.execute("DROP TABLE IF EXISTS ledger_entry");
        jdbc.execute("CREATE TABLE ledger_entry (account VARCHAR(64) NOT NULL, entry VARCHAR(64) NOT NULL)");
        JdbcFencing fencing = new JdbcFencing(jdbc);
        fencing.createFenceTable();
        jdbc.update("DELETE FROM " + JdbcFencing.DEFAULT_FENCE_TABLE);
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = resources.size() - 1; i >= 0; i--) {
            resources.get(i).close();
        }
        data.close();
    }

    @Test
    void aRowGuardRefusesTheHolderPausedPastItsLeaseAndKeepsTheNewerValue() throws Exception {
        FencedTable accounts = new JdbcFencing(jdbc).table("fenced_account", "fence_token");

        PausedHolder.Outcome outcome = PausedHolder.run(instance(), instance(), "account:1", LEASE,
                token -> accounts.update(token, "balance = ?", "id = ?", 100, 1),
                token -> accounts.update(token, "balance = ?", "id = ?", 200, 1));

        assertThat(outcome.newerToken()).isGreaterThan(outcome.pausedToken());
        assertThat(outcome.pausedWriteFailure()).isInstanceOf(StaleFencingTokenException.class)
                .hasMessage("Stale fencing token for fenced_account where id = ? [1]: offered " + outcome.pausedToken()
                        + ", but " + outcome.newerToken() + " was already accepted; the lock was lost and a newer holder "
                        + "has written, so this write was refused");
        assertThat(jdbc.queryForMap("SELECT balance, fence_token FROM fenced_account WHERE id = 1").values())
                .containsExactly(200L, outcome.newerToken());
    }

    @Test
    void aRowGuardAcceptsTheSameTokenAgainAndWritesNothingWhereNoRowMatches() {
        FencedTable accounts = new JdbcFencing(jdbc).table("fenced_account", "fence_token");
        assertThat(accounts.update(7, "balance = balance + ?", "id = ?", 5, 1)).isEqualTo(1);
        assertThat(accounts.update(7, "balance = balance + ?", "id = ?", 5, 1)).isEqualTo(1);
        assertThat(accounts.update(7, "balance = 1", "id = ?", 99)).isZero();
        assertThatThrownBy(() -> accounts.update(6, "balance = 0", "id = ?", 1)).isInstanceOf(StaleFencingTokenException.class);
        assertThat(jdbc.queryForObject("SELECT balance FROM fenced_account WHERE id = 1", Long.class)).isEqualTo(10L);
        assertThatThrownBy(() -> new JdbcFencing(jdbc).table("fenced_account; DROP TABLE x", "fence_token"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("table must be a plain SQL identifier");
    }

    @Test
    void aFenceRowClaimedInATransactionalLockedMethodRefusesThePausedHolder() throws Exception {
        try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
            context.registerBean(DataSource.class, () -> data);
            context.registerBean(LockManager.class, this::instance);
            context.register(LedgerConfiguration.class);
            context.refresh();
            Ledger ledger = context.getBean(Ledger.class);
            JdbcFencing fencing = context.getBean(JdbcFencing.class);
            TransactionTemplate transaction = new TransactionTemplate(context.getBean(DataSourceTransactionManager.class));
            Pause pause = context.getBean(Pause.class);
            pause.acquired = new CountDownLatch(1);
            pause.resume = new CountDownLatch(1);
            ExecutorService pool = Executors.newSingleThreadExecutor();
            resources.add(pool::shutdownNow);

            Future<Long> paused = pool.submit(() -> ledger.record("acct-1", "paused"));
            assertThat(pause.acquired.await(30, TimeUnit.SECONDS)).isTrue();
            long newerToken;
            try (LockHandle newer = instance().acquire(LockRequest.builder("ledger:acct-1").waitTime(Duration.ofSeconds(30)).build())) {
                newerToken = newer.fencingToken();
                transaction.executeWithoutResult(status -> {
                    fencing.claim("ledger:acct-1", newer.fencingToken());
                    jdbc.update("INSERT INTO ledger_entry (account, entry) VALUES (?, ?)", "acct-1", "newer");
                });
            } finally {
                pause.resume.countDown();
            }

            assertThatThrownBy(paused::get).isInstanceOf(ExecutionException.class).cause()
                    .isInstanceOf(StaleFencingTokenException.class)
                    .hasMessageContaining("fence row 'ledger:acct-1'")
                    .hasMessageContaining(newerToken + " was already accepted");
            assertThat(jdbc.queryForList("SELECT entry FROM ledger_entry", String.class)).containsExactly("newer");
            assertThat(jdbc.queryForObject("SELECT token FROM dlock_fence WHERE resource = 'ledger:acct-1'", Long.class))
                    .isEqualTo(newerToken);

            assertThat(ledger.recordNow("acct-1", "later")).as("the next holder's token is larger still").isGreaterThan(newerToken);
            assertThat(jdbc.queryForList("SELECT entry FROM ledger_entry", String.class)).containsExactly("newer", "later");
        }
    }

    @Test
    void aFenceRowClaimOutsideATransactionIsRefused() {
        assertThatThrownBy(() -> new JdbcFencing(jdbc).claim("ledger:acct-2", 5)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("JdbcFencing.claim('ledger:acct-2') needs a transaction");
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM dlock_fence", Integer.class)).isZero();
    }

    @Test
    void aFencedEntityLoadedBeforeThePauseIsRefusedByTheDatabase() throws Exception {
        EntityManagerFactory entities = entityManagerFactory();
        resources.add(entities::close);
        EntityManager pausedSession = entities.createEntityManager();
        resources.add(pausedSession::close);
        FencedAccount[] loadedBeforePause = new FencedAccount[1];

        PausedHolder.Outcome outcome = PausedHolder.run(instance(), instance(), "account:1", LEASE,
                token -> {
                    pausedSession.getTransaction().begin();
                    loadedBeforePause[0] = pausedSession.find(FencedAccount.class, 1L);
                },
                token -> {
                    FencedAccount stale = loadedBeforePause[0];
                    // What a check in Java would compare: the copy loaded before the pause says "not older".
                    assertThat(stale.fenceToken()).isLessThanOrEqualTo(token);
                    stale.balance(100);
                    try {
                        new JpaFencing(pausedSession).fence(stale, token);
                    } finally {
                        pausedSession.getTransaction().commit(); // even a swallowed refusal writes nothing
                    }
                },
                token -> {
                    EntityManager session = entities.createEntityManager();
                    try {
                        session.getTransaction().begin();
                        FencedAccount account = new JpaFencing(session).fence(session.find(FencedAccount.class, 1L), token);
                        account.balance(200);
                        session.getTransaction().commit();
                    } finally {
                        session.close();
                    }
                });

        assertThat(outcome.pausedWriteFailure()).isInstanceOf(StaleFencingTokenException.class)
                .hasMessageContaining("FencedAccount 1: offered " + outcome.pausedToken() + ", but " + outcome.newerToken());
        assertThat(jdbc.queryForMap("SELECT balance, fence_token FROM fenced_account WHERE id = 1").values())
                .containsExactly(200L, outcome.newerToken());
    }

    @Test
    void aLazyProxyIsRefusedSinceItsTokenWouldNotReachTheEntity() {
        EntityManagerFactory entities = entityManagerFactory();
        resources.add(entities::close);
        EntityManager session = entities.createEntityManager();
        resources.add(session::close);
        session.getTransaction().begin();
        FencedAccount reference = session.getReference(FencedAccount.class, 1L);
        assertThatThrownBy(() -> new JpaFencing(session).fence(reference, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("Cannot fence a lazy proxy of FencedAccount");
        session.getTransaction().rollback();
    }

    private EntityManagerFactory entityManagerFactory() {
        return new PersistenceConfiguration("fencing").managedClass(FencedAccount.class)
                .property("hibernate.connection.datasource", data)
                .property("hibernate.hbm2ddl.auto", "none")
                .createEntityManagerFactory();
    }

    /** A lock manager over the JDBC lock store with a pool of its own: another instance of the service. */
    private LockManager instance() {
        HikariDataSource pool = pool();
        resources.add(pool);
        JdbcLockBackend backend = JdbcLockBackend.builder(pool).createSchema(true).build();
        resources.add(backend);
        LockManager manager = LockManager.builder(backend).build();
        resources.add(manager);
        return manager;
    }

    private HikariDataSource pool() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl());
        config.setUsername(user());
        config.setPassword("");
        config.setMaximumPoolSize(4);
        config.setMinimumIdle(0);
        return new HikariDataSource(config);
    }

    /** The service under test: a locked, transactional method that claims its fence row after a pause. */
    public static class Ledger {

        private final JdbcTemplate jdbc;
        private final JdbcFencing fencing;
        private final Pause pause;

        /** Writes through {@code jdbc}, fenced by {@code fencing}, pausing as {@code pause} says. */
        public Ledger(JdbcTemplate jdbc, JdbcFencing fencing, Pause pause) {
            this.jdbc = jdbc;
            this.fencing = fencing;
            this.pause = pause;
        }

        /** Records an entry under the account's lock, pausing first when the test says so; returns the token used. */
        @DistributedLock(name = "ledger", key = "#account", leaseTime = "200ms")
        @Transactional
        public long record(String account, String entry) throws InterruptedException {
            pause.acquired.countDown();
            if (!pause.resume.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never resumed");
            }
            return write(account, entry);
        }

        /**
         * As {@link #record}, without the pause, on a lease that outlasts a slow call on a loaded machine (the short
         * lease is there for the paused holder to lose; a 200 ms one ran out under this call beside another build).
         */
        @DistributedLock(name = "ledger", key = "#account", leaseTime = "60s")
        @Transactional
        public long recordNow(String account, String entry) {
            return write(account, entry);
        }

        private long write(String account, String entry) {
            fencing.claim("ledger:" + account);
            jdbc.update("INSERT INTO ledger_entry (account, entry) VALUES (?, ?)", account, entry);
            return LockContext.current().fencingToken();
        }
    }

    /** Where the ledger's locked method signals it holds the lock and waits to be resumed (not proxied, unlike the ledger). */
    static final class Pause {
        volatile CountDownLatch acquired = new CountDownLatch(0);
        volatile CountDownLatch resume = new CountDownLatch(0);
    }

    /** Locks, transactions and the ledger. */
    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks
    @EnableTransactionManagement
    static class LedgerConfiguration {

        @Bean
        JdbcTemplate jdbcTemplate(DataSource dataSource) {
            return new JdbcTemplate(dataSource);
        }

        @Bean
        DataSourceTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        JdbcFencing jdbcFencing(JdbcTemplate jdbc) {
            return new JdbcFencing(jdbc);
        }

        @Bean
        Pause pause() {
            return new Pause();
        }

        @Bean
        Ledger ledger(JdbcTemplate jdbc, JdbcFencing fencing, Pause pause) {
            return new Ledger(jdbc, fencing, pause);
        }
    }
}
