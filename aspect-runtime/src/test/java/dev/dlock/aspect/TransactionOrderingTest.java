package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabaseBuilder;
import org.springframework.jdbc.datasource.embedded.EmbeddedDatabaseType;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import javax.sql.DataSource;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** The lock wraps {@code @Transactional}: it is released after the commit (H2 + DataSourceTransactionManager, in-memory store). */
class TransactionOrderingTest {

    /** Writes and reads a ledger under one lock name, each in its own transaction. */
    public static class LedgerService {
        private final JdbcTemplate jdbc;

        public LedgerService(JdbcTemplate jdbc) {
            this.jdbc = jdbc;
        }

        @DistributedLock(key = "#account", name = "ledger")
        @Transactional
        public void credit(String account, Runnable afterCommit) {
            jdbc.update("insert into ledger(account, amount) values (?, 1)", account);
            TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
                @Override
                public void afterCommit() {
                    afterCommit.run();
                }
            });
        }

        @DistributedLock(key = "#account", name = "ledger", waitTime = "10s")
        @Transactional(readOnly = true)
        public int entries(String account) {
            Integer count = jdbc.queryForObject("select count(*) from ledger where account = ?", Integer.class, account);
            return count == null ? 0 : count;
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class Database {
        @Bean(destroyMethod = "shutdown")
        DataSource dataSource() {
            return new EmbeddedDatabaseBuilder().setType(EmbeddedDatabaseType.H2).generateUniqueName(true).build();
        }

        @Bean
        JdbcTemplate jdbcTemplate(DataSource dataSource) {
            JdbcTemplate jdbc = new JdbcTemplate(dataSource);
            jdbc.execute("create table ledger(account varchar(64), amount int)");
            return jdbc;
        }

        @Bean
        PlatformTransactionManager transactionManager(DataSource dataSource) {
            return new DataSourceTransactionManager(dataSource);
        }

        @Bean
        LedgerService ledgerService(JdbcTemplate jdbcTemplate) {
            return new LedgerService(jdbcTemplate);
        }
    }

    /** Deliberately wrong: the lock inside the transaction, to show the test tells the orders apart. */
    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks(order = Ordered.LOWEST_PRECEDENCE)
    @EnableTransactionManagement(order = 0)
    static class LockInsideTransaction {
    }

    private static LockManager otherJvm;

    @BeforeAll
    static void start() {
        otherJvm = TestContexts.otherJvm();
    }

    @AfterAll
    static void stop() {
        otherJvm.close();
    }

    /** Credits an account; returns whether the key was still held in the store when the transaction had committed. */
    private static boolean heldAfterCommit(LedgerService ledger, String account) {
        AtomicReference<Boolean> held = new AtomicReference<>();
        ledger.credit(account, () -> {
            Optional<LockHandle> other = otherJvm.tryAcquire("ledger:" + account);
            other.ifPresent(LockHandle::close);
            held.set(other.isEmpty());
        });
        return held.get();
    }

    @Test
    void byDefaultTheLockIsReleasedAfterTheCommit() throws Exception {
        try (AnnotationConfigApplicationContext context = TestContexts.start(Database.class)) {
            LedgerService ledger = context.getBean(LedgerService.class);
            String account = UUID.randomUUID().toString();
            assertThat(heldAfterCommit(ledger, account)).as("lock still held when the commit is done").isTrue();

            // A reader waiting for the lock during the commit sees the committed row once it gets the lock.
            String second = UUID.randomUUID().toString();
            CountDownLatch readerQueued = context.getBean(TestContexts.AttemptCounter.class).expect("ledger", 2);
            AtomicReference<CompletableFuture<Integer>> reader = new AtomicReference<>();
            ledger.credit(second, () -> {
                reader.set(CompletableFuture.supplyAsync(() -> ledger.entries(second)));
                try {
                    assertThat(readerQueued.await(5, TimeUnit.SECONDS)).isTrue();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertThat(reader.get().get(10, TimeUnit.SECONDS)).isEqualTo(1);
        }
    }

    @Test
    void withTheLockInsideTheTransactionItWouldBeReleasedBeforeTheCommit() {
        try (AnnotationConfigApplicationContext context = TestContexts.start(c -> c.register(LockInsideTransaction.class), Database.class)) {
            LedgerService ledger = context.getBean(LedgerService.class);
            assertThat(heldAfterCommit(ledger, UUID.randomUUID().toString())).isFalse();
        }
    }
}
