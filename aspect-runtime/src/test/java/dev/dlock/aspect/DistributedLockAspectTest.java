package dev.dlock.aspect;

import dev.dlock.aspect.LockedService.Order;
import dev.dlock.aspect.SupportBeans.KeyBean;
import dev.dlock.aspect.SupportBeans.SaleState;
import dev.dlock.core.HeldLock;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKeyException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every attribute of {@code @DistributedLock} through Spring AOP. */
class DistributedLockAspectTest {

    @Configuration(proxyBeanMethods = false)
    static class Services {
        @Bean
        LockedService lockedService(LockManager lockManager) {
            return new LockedService(lockManager);
        }

        @Bean
        KeyBean keyBean() {
            return new KeyBean();
        }

        @Bean
        SaleState saleState() {
            return new SaleState();
        }
    }

    private static AnnotationConfigApplicationContext context;
    private static LockedService service;
    private static LockManager otherJvm;
    private String id;

    @BeforeAll
    static void startContext() {
        context = TestContexts.start(Services.class);
        service = context.getBean(LockedService.class);
        otherJvm = TestContexts.otherJvm();
    }

    @AfterAll
    static void stopContext() {
        context.close();
        otherJvm.close();
    }

    @BeforeEach
    void freshKey() {
        id = UUID.randomUUID().toString();
        service.runs().set(0);
    }

    private LockHandle holdElsewhere(String lockKey) {
        return otherJvm.acquire(lockKey, Duration.ofSeconds(1));
    }

    // ------------------------------------------------------------------ key and name

    @Test
    void keyExpressionsResolveFromArgumentsAndNameDefaultsToClassAndMethod() {
        assertThat(service.ship(new Order(42, "eu"))).isEqualTo("LockedService.ship:42");
        assertThat(service.byP0("x")).isEqualTo("LockedService.byP0:x");
        assertThat(service.byA0("y")).isEqualTo("LockedService.byA0:y");
        assertThat(service.byMethodName()).isEqualTo("LockedService.byMethodName:byMethodName");
        assertThat(service.byBean(new Order(7, "eu"))).isEqualTo("LockedService.byBean:bean-7");
        assertThat(service.concatenated(new Order(8, "us"))).isEqualTo("LockedService.concatenated:us-8");
        assertThat(service.byLong(123L)).isEqualTo("LockedService.byLong:123");
        assertThat(service.named("z")).isEqualTo("orders orders:z");
    }

    @Test
    void aNullOrBlankKeyFailsNamingMethodAndExpressionAndTheMethodDoesNotRun() {
        assertThatThrownBy(() -> service.nullable(null))
                .isInstanceOf(LockKeyException.class)
                .hasMessageContaining("LockedService.nullable(String)")
                .hasMessageContaining("'#id'")
                .hasMessageContaining("null");
        assertThatThrownBy(() -> service.nullable("  "))
                .isInstanceOf(LockKeyException.class).hasMessageContaining("blank");
        assertThatThrownBy(() -> service.ship(null))
                .isInstanceOf(LockKeyException.class).hasMessageContaining("'#order.id'");
        assertThat(service.runs()).hasValue(0);
    }

    @Test
    void theLockExcludesConcurrentCallersOnTheSameKey() throws Exception {
        int threads = 8;
        int callsEach = 25;
        int before = service.detector().counter();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < callsEach; i++) {
                        service.exclusive(new Order(991, "eu"));
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(service.detector().overlaps()).isZero();
        assertThat(service.detector().counter() - before).isEqualTo(threads * callsEach);
    }

    @Test
    void lockContextExposesAnIncreasingFencingToken() {
        long first = service.fencing(id);
        long second = service.fencing(id);
        assertThat(first).isPositive();
        assertThat(second).isGreaterThan(first);
        assertThat(LockContext.find()).isEmpty();
    }

    // ------------------------------------------------------------------ waitTime, leaseTime, condition

    @Test
    void waitTimeZeroTriesOnceAndThrowsNamingLockAndKey() {
        try (LockHandle ignored = holdElsewhere("LockedService.tryOnce:" + id)) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> service.tryOnce(id))
                    .isInstanceOf(LockNotAcquiredException.class)
                    .hasMessageContaining("LockedService.tryOnce")
                    .hasMessageContaining(id);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofMillis(500));
        }
        assertThat(service.runs()).hasValue(0);
        assertThat(service.tryOnce(id)).isEqualTo("ran");
    }

    @Test
    void waitTimeDurationAndPlaceholderAreHonoured() {
        try (LockHandle ignored = holdElsewhere("LockedService.waitShort:" + id);
             LockHandle ignored2 = holdElsewhere("LockedService.waitFromProperty:" + id)) {
            long start = System.nanoTime();
            LockNotAcquiredException shortWait = (LockNotAcquiredException) catchThrowable(() -> service.waitShort(id));
            assertThat(shortWait.waited()).isGreaterThanOrEqualTo(Duration.ofMillis(300));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
            LockNotAcquiredException propertyWait = (LockNotAcquiredException) catchThrowable(() -> service.waitFromProperty(id));
            assertThat(propertyWait.waited()).isGreaterThanOrEqualTo(Duration.ofMillis(250)).isLessThan(Duration.ofMillis(1500));
        }
    }

    @Test
    void aWaiterGetsTheLockWhenTheHolderReleasesWithinTheWait() throws Exception {
        LockHandle held = holdElsewhere("LockedService.waitShort:" + id);
        CompletableFuture<String> waiter = CompletableFuture.supplyAsync(() -> service.waitShort(id));
        held.close();
        assertThat(waiter.get(5, TimeUnit.SECONDS)).isEqualTo("ran");
    }

    @Test
    void leaseTimeGivesAFixedLeaseAndEmptyGivesAWatchdogManagedOne() {
        HeldLock fixed = service.fixedLease(id);
        assertThat(fixed.watchdogManaged()).isFalse();
        assertThat(fixed.leaseExpiresIn()).isLessThanOrEqualTo(Duration.ofSeconds(2)).isGreaterThan(Duration.ofSeconds(1));
        assertThat(service.watchdogLease(id).watchdogManaged()).isTrue();
    }

    @Test
    void aFalseConditionRunsTheMethodWithoutTheLock() {
        try (LockHandle ignored = holdElsewhere("LockedService.conditional:" + id)) {
            assertThat(service.conditional(id, false)).isFalse();
            assertThatThrownBy(() -> service.conditional(id, true)).isInstanceOf(LockNotAcquiredException.class);
        }
        assertThat(service.conditional(id, true)).isTrue();
    }

    // ------------------------------------------------------------------ failure strategies

    @Test
    void skipReturnsTheEmptyValueOfTheReturnTypeWithoutRunningTheMethod() {
        try (LockHandle a = holdElsewhere("LockedService.skipOptional:" + id);
             LockHandle b = holdElsewhere("LockedService.skipList:" + id);
             LockHandle c = holdElsewhere("LockedService.skipMap:" + id);
             LockHandle d = holdElsewhere("LockedService.skipInt:" + id);
             LockHandle e = holdElsewhere("LockedService.skipBoolean:" + id);
             LockHandle f = holdElsewhere("LockedService.skipString:" + id)) {
            assertThat(service.skipOptional(id)).isEmpty();
            assertThat(service.skipList(id)).isEmpty();
            assertThat(service.skipMap(id)).isEmpty();
            assertThat(service.skipInt(id)).isZero();
            assertThat(service.skipBoolean(id)).isFalse();
            assertThat(service.skipString(id)).isNull();
        }
        assertThat(service.runs()).hasValue(0);
        assertThat(service.skipOptional(id)).contains("ran");
    }

    @Test
    void fallbackIsCalledWithTheArgumentsAndOptionallyTheFailure() {
        try (LockHandle a = holdElsewhere("LockedService.withFallback:" + id);
             LockHandle b = holdElsewhere("LockedService.withFallbackCause:" + id)) {
            assertThat(service.withFallback(id)).isEqualTo("fallback " + id);
            assertThat(service.withFallbackCause(id))
                    .isEqualTo("fallback LockedService.withFallbackCause LockedService.withFallbackCause:" + id);
        }
        assertThat(service.runs()).hasValue(0);
        assertThat(service.withFallback(id)).isEqualTo("ran");
    }

    @Test
    void checkedExceptionsPassThroughUnchangedAndTheLockIsReleased() {
        assertThatThrownBy(() -> service.failChecked(id)).isExactlyInstanceOf(IOException.class).hasMessage("checked " + id);
        assertThat(otherJvm.tryAcquire("LockedService.failChecked:" + id)).hasValueSatisfying(LockHandle::close);
    }

    // ------------------------------------------------------------------ abortIf

    @Test
    void abortIfStopsOneHundredWaitersWithinOneSecondOfTheFlip() throws Exception {
        SaleState sale = context.getBean(SaleState.class);
        sale.setSoldOut(false);
        int buyers = 100;
        CountDownLatch queued = context.getBean(TestContexts.AttemptCounter.class).expect("LockedService.buy", buyers);
        ExecutorService pool = Executors.newFixedThreadPool(buyers);
        try (LockHandle ignored = holdElsewhere("LockedService.buy:" + id)) {
            List<Future<Long>> returnedAt = new ArrayList<>();
            for (int i = 0; i < buyers; i++) {
                returnedAt.add(pool.submit(() -> {
                    String result = service.buy(id);
                    assertThat(result).isNull();
                    return System.nanoTime();
                }));
            }
            assertThat(queued.await(10, TimeUnit.SECONDS)).as("all buyers waiting").isTrue();
            long flippedAt = System.nanoTime();
            sale.setSoldOut(true);
            for (Future<Long> f : returnedAt) {
                long at = f.get(5, TimeUnit.SECONDS);
                assertThat(Duration.ofNanos(at - flippedAt)).isLessThan(Duration.ofSeconds(1));
            }
        } finally {
            pool.shutdownNow();
            sale.setSoldOut(false);
        }
    }

    @Test
    void abortIfTrueBeforeWaitingFailsWithTheStrategy() {
        SaleState sale = context.getBean(SaleState.class);
        sale.setSoldOut(true);
        try {
            assertThatThrownBy(() -> service.buyOrThrow(id))
                    .isInstanceOf(LockNotAcquiredException.class)
                    .satisfies(e -> assertThat(((LockNotAcquiredException) e).reason()).isEqualTo(LockNotAcquiredException.Reason.ABORTED));
        } finally {
            sale.setSoldOut(false);
        }
        assertThat(otherJvm.tryAcquire("LockedService.buyOrThrow:" + id)).hasValueSatisfying(LockHandle::close);
    }

    // ------------------------------------------------------------------ keys

    @Test
    void keysExpandCollectionsAndArraysSortedAndDeduplicated() {
        List<String> keys = service.many(List.of("c", "a", "b"), new String[] {"a", "d"});
        assertThat(keys).containsExactly("LockedService.many:a", "LockedService.many:b", "LockedService.many:c", "LockedService.many:d");
        assertThatThrownBy(() -> service.many(List.of(), new String[0])).isInstanceOf(LockKeyException.class)
                .hasMessageContaining("no key");
    }

    @Test
    void twoKeyLocksTakenInOppositeOrdersNeverDeadlock() throws Exception {
        String a = id + "-a";
        String b = id + "-b";
        int rounds = 200;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<?> forward = pool.submit(() -> {
                start.await();
                for (int i = 0; i < rounds; i++) {
                    service.pair(a, b);
                }
                return null;
            });
            Future<?> backward = pool.submit(() -> {
                start.await();
                for (int i = 0; i < rounds; i++) {
                    service.pair(b, a);
                }
                return null;
            });
            int before = service.detector().counter();
            start.countDown();
            forward.get(30, TimeUnit.SECONDS);
            backward.get(30, TimeUnit.SECONDS);
            assertThat(service.detector().counter() - before).isEqualTo(2 * rounds);
        } finally {
            pool.shutdownNow();
        }
        assertThat(service.detector().overlaps()).isZero();
    }

    @Test
    void aMultiKeyLockIsAllOrNothing() {
        try (LockHandle ignored = holdElsewhere("LockedService.pairQuick:" + id + "-b")) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> service.pairQuick(id + "-b", id + "-a")).isInstanceOf(LockNotAcquiredException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
            // the first key, taken before the second failed, was released
            assertThat(otherJvm.tryAcquire("LockedService.pairQuick:" + id + "-a")).hasValueSatisfying(LockHandle::close);
        }
    }

    private static Throwable catchThrowable(Runnable call) {
        try {
            call.run();
        } catch (Throwable t) {
            return t;
        }
        throw new AssertionError("expected an exception");
    }
}
