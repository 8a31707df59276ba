package dev.dlock.boot;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.annotation.DistributedLock;
import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Boot application on the in-memory store whose annotated methods nest two lock names: the opposite orders of
 * two call paths are warned once, naming both methods, and counted; a consistent order and re-entry are not.
 */
class LockOrderWarningsTest {

    /** Takes {@code account}, then what it calls. */
    public static class OrderService {
        private final LedgerService ledger;
        private final AccountService accounts;

        public OrderService(LedgerService ledger, AccountService accounts) {
            this.ledger = ledger;
            this.accounts = accounts;
        }

        /** Locks the account, then posts to the ledger. */
        @DistributedLock(name = "account", key = "#id")
        public void transfer(long id) {
            ledger.post(id);
        }

        /** The same order as {@link #transfer}. */
        @DistributedLock(name = "account", key = "#id")
        public void refund(long id) {
            ledger.post(id);
        }

        /** Locks the account, posts to the ledger, and inside that re-enters the account it holds. */
        @DistributedLock(name = "account", key = "#id")
        public void transferAndSettle(long id) {
            ledger.postAndSettle(id);
        }
    }

    /** Takes {@code ledger}. */
    public static class LedgerService {
        private final AccountService accounts;

        public LedgerService(AccountService accounts) {
            this.accounts = accounts;
        }

        /** Locks the ledger only. */
        @DistributedLock(name = "ledger", key = "#id")
        public void post(long id) {
        }

        /** Locks the ledger, then debits the account: re-entry when the caller holds that account already. */
        @DistributedLock(name = "ledger", key = "#id")
        public void postAndSettle(long id) {
            accounts.debit(id);
        }

        /** Locks the ledger, then the account: the opposite of {@link OrderService#transfer}. */
        @DistributedLock(name = "ledger", key = "#id")
        public void close(long id) {
            accounts.debit(id);
        }
    }

    /** Takes {@code account}. */
    public static class AccountService {
        /** Locks the account only. */
        @DistributedLock(name = "account", key = "#id")
        public void debit(long id) {
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Shop {
        @Bean
        AccountService accountService() {
            return new AccountService();
        }

        @Bean
        LedgerService ledgerService(AccountService accounts) {
            return new LedgerService(accounts);
        }

        @Bean
        OrderService orderService(LedgerService ledger, AccountService accounts) {
            return new OrderService(ledger, accounts);
        }
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, DistributedLockAutoConfiguration.class,
                    DistributedLockMetricsAutoConfiguration.class))
            .withConfiguration(BootLine.METRICS)
            .withUserConfiguration(Shop.class)
            .withPropertyValues("dlock.store=in-memory");

    private final Logger logger = (Logger) LoggerFactory.getLogger("dev.dlock.core.LockOrderMonitor");
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @BeforeEach
    void captureLog() {
        logged.start();
        logger.addAppender(logged);
    }

    @AfterEach
    void stopCapture() {
        logger.detachAppender(logged);
    }

    private List<String> warnings() {
        return logged.list.stream().filter(event -> event.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage).toList();
    }

    private static double inversions(MeterRegistry registry, String lockName, String otherLockName) {
        var counter = registry.find(LockMetrics.LOCK_ORDER_INVERSIONS).tag(LockMetrics.TAG_LOCK_NAME, lockName)
                .tag(LockMetrics.TAG_OTHER_LOCK_NAME, otherLockName).counter();
        return counter == null ? 0 : counter.count();
    }

    @Test
    void twoMethodsNestingTheSameLocksInOppositeOrdersAreWarnedOnceAndCounted() {
        runner.run(context -> {
            OrderService orders = context.getBean(OrderService.class);
            LedgerService ledger = context.getBean(LedgerService.class);
            MeterRegistry registry = context.getBean(MeterRegistry.class);

            orders.transfer(1);
            assertThat(warnings()).isEmpty();
            ledger.close(2);
            // Repeated inversions, by either path, are not warned again.
            ledger.close(3);
            orders.transfer(4);

            assertThat(warnings()).singleElement().satisfies(warning -> assertThat(warning)
                    .contains("between locks 'account' and 'ledger'")
                    .contains("OrderService.transfer(..) took 'account' then 'ledger' (in LedgerService.post(..))")
                    .contains("LedgerService.close(..) took 'ledger' then 'account' (in AccountService.debit(..))"));
            assertThat(inversions(registry, "account", "ledger")).isEqualTo(1);
            assertThat(registry.get(LockMetrics.LOCK_ORDER_INVERSIONS).counter().getId().getDescription())
                    .isEqualTo(LockMetrics.LOCK_ORDER_INVERSIONS_DESCRIPTION);
        });
    }

    @Test
    void aConsistentOrderAndReEntryAreNotWarned() {
        runner.run(context -> {
            OrderService orders = context.getBean(OrderService.class);
            orders.transfer(1);
            orders.refund(1);
            // ledger is held when account is asked for again, but account was taken first: re-entry, no new order.
            orders.transferAndSettle(1);
            orders.transferAndSettle(2);

            assertThat(warnings()).isEmpty();
            assertThat(inversions(context.getBean(MeterRegistry.class), "account", "ledger")).isZero();
        });
    }

    @Test
    void programmaticLocksAgainstAnAnnotatedMethodAreWarnedToo() {
        runner.run(context -> {
            LockManager locks = context.getBean(LockManager.class);
            context.getBean(OrderService.class).transfer(1);
            try (LockHandle ledger = locks.acquire(LockRequest.builder("ledger:9").name("ledger").waitTime(Duration.ZERO).build());
                 LockHandle account = locks.acquire(LockRequest.builder("account:9").name("account").waitTime(Duration.ZERO).build())) {
                assertThat(account.isHeld()).isTrue();
            }

            assertThat(warnings()).singleElement().satisfies(warning -> assertThat(warning)
                    .contains("OrderService.transfer(..) took 'account' then 'ledger'")
                    .contains("LockOrderWarningsTest.lambda$programmaticLocksAgainstAnAnnotatedMethodAreWarnedToo")
                    .contains("took 'account' while holding 'ledger'"));
            assertThat(inversions(context.getBean(MeterRegistry.class), "account", "ledger")).isEqualTo(1);
        });
    }

    @Test
    void switchedOffByProperty() {
        runner.withPropertyValues("dlock.lock-order-warnings=false").run(context -> {
            context.getBean(OrderService.class).transfer(1);
            context.getBean(LedgerService.class).close(1);

            assertThat(warnings()).isEmpty();
            assertThat(inversions(context.getBean(MeterRegistry.class), "account", "ledger")).isZero();
        });
    }
}
