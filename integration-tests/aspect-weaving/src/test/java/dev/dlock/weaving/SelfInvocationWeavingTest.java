package dev.dlock.weaving;

import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.SharedRedis;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.aspect.DistributedLockAnnotationValidator;
import dev.dlock.aspect.DistributedLockAspect;
import dev.dlock.aspect.LockAspectSupport;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.testkit.OverlapDetector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** With ajc compile-time weaving and no Spring context, {@code this.locked()} is locked, against a real Redis. */
class SelfInvocationWeavingTest {

    private static UnifiedJedis client;
    private static LockManager lockManager;
    private static UnifiedJedis otherClient;
    private static LockManager otherJvm;

    @BeforeAll
    static void configureTheWovenAspect() {
        client = SharedRedis.client();
        lockManager = LockManager.builder(RedisLockBackend.builder(client).build()).leaseTime(Duration.ofSeconds(3)).build();
        otherClient = SharedRedis.client();
        otherJvm = LockManager.builder(RedisLockBackend.builder(otherClient).build()).watchdogThreadName("other-jvm-watchdog").build();
        DistributedLockAspect.configureWoven(LockAspectSupport.builder(lockManager).build());
    }

    @AfterAll
    static void stop() {
        lockManager.close();
        otherJvm.close();
        client.close();
        otherClient.close();
    }

    @Test
    void selfInvocationIsLockedAcrossThreads() throws Exception {
        SelfInvokingWorker worker = new SelfInvokingWorker();
        OverlapDetector detector = new OverlapDetector();
        String id = UUID.randomUUID().toString();
        int threads = 8;
        int callsEach = 25;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < callsEach; i++) {
                        worker.work(id, () -> {
                            detector.enter();
                            detector.incrementUnsafely();
                            detector.exit();
                        });
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
        assertThat(detector.overlaps()).isZero();
        assertThat(detector.counter()).isEqualTo(threads * callsEach);
    }

    @Test
    void theSelfInvokedMethodHoldsTheKeyInTheStore() {
        SelfInvokingWorker worker = new SelfInvokingWorker();
        String id = UUID.randomUUID().toString();
        boolean[] heldElsewhere = new boolean[1];
        worker.work(id, () -> heldElsewhere[0] = otherJvm.tryAcquire("SelfInvokingWorker.locked:" + id).isEmpty());
        assertThat(heldElsewhere[0]).as("the key was held in Redis during the self-invoked call").isTrue();
        assertThat(otherJvm.tryAcquire("SelfInvokingWorker.locked:" + id)).hasValueSatisfying(LockHandle::close);
    }

    @Test
    void aPrivateSelfInvokedMethodIsLockedToo() {
        SelfInvokingWorker worker = new SelfInvokingWorker();
        String id = UUID.randomUUID().toString();
        long first = worker.tokenViaPrivateMethod(id);
        assertThat(worker.tokenViaPrivateMethod(id)).isGreaterThan(first);
        try (LockHandle ignored = otherJvm.acquire("worker.private:" + id, Duration.ofSeconds(1))) {
            assertThatThrownBy(() -> worker.tokenViaPrivateMethod(id)).isInstanceOf(LockNotAcquiredException.class);
        }
    }

    @Test
    void wovenStaticAndFinalMethodsAreLocked() {
        SelfInvokingWorker worker = new SelfInvokingWorker();
        String id = UUID.randomUUID().toString();
        try (LockHandle ignored = otherJvm.acquire("worker.static:" + id, Duration.ofSeconds(1));
             LockHandle alsoIgnored = otherJvm.acquire("worker.final:" + id, Duration.ofSeconds(1))) {
            assertThatThrownBy(() -> SelfInvokingWorker.staticLocked(id)).isInstanceOf(LockNotAcquiredException.class);
            assertThatThrownBy(() -> worker.finalLocked(id)).isInstanceOf(LockNotAcquiredException.class);
        }
        assertThat(SelfInvokingWorker.staticLocked(id)).isPositive();
        assertThat(worker.finalLocked(id)).isPositive();
    }

    /** Woven code runs the method with the token in place of what the caller passed, on instance and static methods alike. */
    @Test
    void aWovenMethodGetsItsTokenAsAParameter() {
        SelfInvokingWorker worker = new SelfInvokingWorker();
        String id = UUID.randomUUID().toString();
        long first = worker.tokenViaParameter(id);
        assertThat(first).as("the parameter's token, equal to the lock's").isPositive();
        assertThat(worker.tokenViaParameter(id)).isGreaterThan(first);
        long fromStatic = SelfInvokingWorker.staticTokenParameter(0, id);
        assertThat(fromStatic).as("a static method's token, equal to the lock's").isPositive();
        assertThat(SelfInvokingWorker.staticTokenParameter(-1, id)).isGreaterThan(fromStatic);
    }

    /**
     * The startup check that refuses private, static and final locked methods under a Spring proxy, and warns of
     * self-invocations, lets a woven class through: weaving locks all of them.
     */
    @Test
    void theStartupCheckAcceptsAWovenClass() {
        Logger logger = (Logger) LoggerFactory.getLogger(DistributedLockAnnotationValidator.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
            context.registerBean(DistributedLockAnnotationValidator.class,
                    () -> new DistributedLockAnnotationValidator(LockAspectSupport.builder(lockManager).build().operationSource()));
            context.registerBean(SelfInvokingWorker.class);
            context.refresh();
        } finally {
            logger.detachAppender(logged);
        }
        assertThat(logged.list).filteredOn(event -> event.getLevel() == Level.WARN).isEmpty();
    }
}
