package dev.dlock.core;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/** Lock names nested in opposite orders are warned once per pair, through the log and the listener. */
class LockOrderMonitorTest {

    private final InMemoryLockBackend store = new InMemoryLockBackend();
    private final List<String> inversions = new CopyOnWriteArrayList<>();
    private final LockListener recording = new LockListener() {
        @Override
        public void onLockOrderInversion(String lockName, String otherLockName) {
            inversions.add(lockName + "/" + otherLockName);
        }
    };
    private final List<LockManager> managers = new ArrayList<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(LockOrderMonitor.class);
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @BeforeEach
    void captureLog() {
        logged.start();
        logger.addAppender(logged);
    }

    @AfterEach
    void close() {
        logger.detachAppender(logged);
        managers.forEach(LockManager::close);
        store.close();
    }

    private LockManager manager(Consumer<LockManager.Builder> config) {
        LockManager.Builder builder = LockManager.builder(store).listener(recording);
        config.accept(builder);
        LockManager manager = builder.build();
        managers.add(manager);
        return manager;
    }

    private static LockRequest request(String name, String key) {
        return LockRequest.builder(name + ":" + key).name(name).waitTime(Duration.ZERO).build();
    }

    /** Takes {@code outer} then {@code inner} on the calling thread, and lets both go. */
    private static void nest(LockManager locks, String outer, String inner) {
        try (LockHandle first = locks.acquire(request(outer, "1"))) {
            try (LockHandle second = locks.acquire(request(inner, "1"))) {
                assertThat(second.isHeld()).isTrue();
            }
        }
    }

    private List<String> warnings() {
        return logged.list.stream().filter(event -> event.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage).toList();
    }

    @Test
    void programmaticLocksTakenInOppositeOrdersAreWarnedOnceNamingBothCallers() {
        LockManager locks = manager(builder -> { });
        nest(locks, "account", "ledger");
        assertThat(warnings()).isEmpty();

        nest(locks, "ledger", "account");
        nest(locks, "ledger", "account");
        nest(locks, "account", "ledger");

        assertThat(inversions).containsExactly("account/ledger");
        assertThat(warnings()).singleElement().satisfies(warning -> assertThat(warning)
                .contains("between locks 'account' and 'ledger'")
                .contains("LockOrderMonitorTest.nest(LockOrderMonitorTest.java:")
                .contains("took 'ledger' while holding 'account'")
                .contains("took 'account' while holding 'ledger'"));
    }

    @Test
    void aConsistentOrderIsNotWarned() {
        LockManager locks = manager(builder -> { });
        for (int i = 0; i < 3; i++) {
            nest(locks, "account", "ledger");
            nest(locks, "ledger", "audit");
            nest(locks, "account", "audit");
        }
        assertThat(warnings()).isEmpty();
        assertThat(inversions).isEmpty();
    }

    @Test
    void reEntryAndSeveralKeysOfOneNameAreNoInversion() {
        LockManager locks = manager(builder -> { });
        try (LockHandle account = locks.acquire(request("account", "1"));
             LockHandle ledger = locks.acquire(request("ledger", "1"));
             // Re-entering the outer lock inside the inner one takes nothing new.
             LockHandle again = locks.acquire(request("account", "1"));
             LockHandle otherAccount = locks.acquire(request("ledger", "2"))) {
            assertThat(again.isHeld()).isTrue();
            assertThat(otherAccount.isHeld()).isTrue();
        }
        assertThat(warnings()).isEmpty();
        assertThat(inversions).isEmpty();
    }

    @Test
    void aLockReleasedOnAnotherThreadIsNoLongerHeldByItsFirstThread() throws Exception {
        LockManager locks = manager(builder -> { });
        // Passed to another thread without detaching it: this thread learns of the release only by the lease's state.
        LockHandle account = locks.acquire(request("account", "1"));
        Thread other = new Thread(account::close);
        other.start();
        other.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(account.isHeld()).isFalse();

        nest(locks, "ledger", "account");
        try (LockHandle ledger = locks.acquire(request("ledger", "2"))) {
            assertThat(ledger.isHeld()).isTrue();
        }
        assertThat(warnings()).isEmpty();
    }

    @Test
    void aLockHandedToAPendingResultNoLongerCountsAsHeldByTheThread() {
        LockManager locks = manager(builder -> { });
        LockHandle pending = locks.acquire(request("account", "9")).detachFromThread();
        try (LockHandle ledger = locks.acquire(request("ledger", "1"))) {
            assertThat(ledger.isHeld()).isTrue();
        }
        nest(locks, "ledger", "account");
        pending.close();

        assertThat(warnings()).isEmpty();
        assertThat(inversions).isEmpty();
    }

    @Test
    void switchedOffByTheBuilder() {
        LockManager locks = manager(builder -> builder.lockOrderWarnings(false));
        nest(locks, "account", "ledger");
        nest(locks, "ledger", "account");
        assertThat(warnings()).isEmpty();
        assertThat(inversions).isEmpty();
    }

    @Test
    void twoThreadsRecordingOppositeOrdersAtOnceWarnExactlyOnce() throws Exception {
        for (int round = 0; round < 300; round++) {
            List<String> told = new CopyOnWriteArrayList<>();
            LockOrderMonitor monitor = new LockOrderMonitor(16, (a, b) -> told.add(a + "/" + b));
            CyclicBarrier start = new CyclicBarrier(2);
            Thread forward = new Thread(() -> {
                await(start);
                monitor.recordOrder("account", "OrderService.transfer(..)", "ledger", "LedgerService.post(..)");
            });
            Thread backward = new Thread(() -> {
                await(start);
                monitor.recordOrder("ledger", "LedgerService.close(..)", "account", "AccountService.debit(..)");
            });
            forward.start();
            backward.start();
            forward.join(10_000);
            backward.join(10_000);
            assertThat(told).as("round %d", round).containsExactly("account/ledger");
        }
        assertThat(warnings()).hasSize(300).allSatisfy(warning -> assertThat(warning)
                .contains("OrderService.transfer(..) took 'account' then 'ledger' (in LedgerService.post(..))")
                .contains("LedgerService.close(..) took 'ledger' then 'account' (in AccountService.debit(..))"));
    }

    @Test
    void pastItsLimitNoNewOrderIsRememberedAndThatIsSaidOnce() {
        LockOrderMonitor monitor = new LockOrderMonitor(2, (a, b) -> inversions.add(a + "/" + b));
        monitor.recordOrder("a", "A.run(..)", "b", null);
        monitor.recordOrder("b", "B.run(..)", "c", null);
        monitor.recordOrder("c", "C.run(..)", "d", null);
        monitor.recordOrder("d", "D.run(..)", "e", null);
        assertThat(monitor.orderCount()).isEqualTo(2);
        assertThat(warnings()).singleElement().satisfies(warning -> assertThat(warning).contains("its limit"));

        // Orders learned before the limit are still checked; an order not stored is checked each time it is seen,
        // and still warned once.
        monitor.recordOrder("b", "B.back(..)", "a", null);
        monitor.recordOrder("b", "B.back(..)", "a", null);
        assertThat(inversions).containsExactly("a/b");
        assertThat(monitor.orderCount()).isEqualTo(2);
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
