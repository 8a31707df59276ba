package dev.dlock.redis;

import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * The lock kinds through the engine ({@link LockManager}) on a real redis-server, with threads and
 * several managers, each over its own client (as separate JVMs would be): permits and read/write
 * exclusion, fair order across managers, and what dead fair waiters cost the living.
 */
// "try": a handle in try-with-resources marks the critical section, the body never needs it.
@SuppressWarnings("try")
class RedisLockKindsEngineTest {

    private static final Duration BOUND = Duration.ofSeconds(20);
    private static final Duration WAITER_TIMEOUT = Duration.ofSeconds(1);
    /** Generous: no test here is about a slow server, and a loaded machine must not fail a call. */
    private static final int CLIENT_TIMEOUT_MILLIS = 5_000;

    private static RedisServerProcess server;

    private final RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private final List<AutoCloseable> closeAfterTest = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();

    @BeforeAll
    static void startRedis() {
        server = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() throws Exception {
        RedisTestSupport.closeAll(server);
    }

    @BeforeEach
    void flush() {
        try (Jedis admin = server.admin()) {
            admin.flushAll();
        }
    }

    @AfterEach
    void closeResources() throws Exception {
        for (Thread thread : threads) {
            thread.interrupt();
            thread.join(BOUND.toMillis());
        }
        for (int i = closeAfterTest.size() - 1; i >= 0; i--) {
            closeAfterTest.get(i).close();
        }
    }

    @Test
    void threePermitsAreHeldAtOnceAndNeverMore() throws Exception {
        List<LockManager> managers = List.of(manager(), manager());
        OverlapDetector detector = new OverlapDetector();
        // The first three holders stay inside until a fourth was refused: three permits at once, and not four.
        CountDownLatch threeInside = new CountDownLatch(3);
        CountDownLatch fourthRefused = new CountDownLatch(1);
        AtomicInteger failures = new AtomicInteger();
        for (int t = 0; t < 6; t++) {
            LockManager locks = managers.get(t % 2);
            start(() -> {
                for (int round = 0; round < 15; round++) {
                    try (LockHandle permit = locks.acquire(request("permits", LockKind.permits(3)))) {
                        detector.enter();
                        if (threeInside.getCount() > 0) {
                            threeInside.countDown();
                            fourthRefused.await(BOUND.toMillis(), TimeUnit.MILLISECONDS);
                        }
                        detector.exit();
                    } catch (RuntimeException | InterruptedException e) {
                        failures.incrementAndGet();
                    }
                }
            });
        }
        assertThat(threeInside.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("three holders at once").isTrue();
        assertThat(manager().tryAcquire(LockRequest.builder("permits").kind(LockKind.permits(3)).waitTime(Duration.ZERO).build()))
                .as("a fourth permit").isEmpty();
        fourthRefused.countDown();
        joinAll();

        assertThat(failures).hasValue(0);
        assertThat(detector.maxInside()).isEqualTo(3);
    }

    @Test
    void aWriterNeverHoldsBesideAReaderOrAnotherWriter() throws Exception {
        List<LockManager> managers = List.of(manager(), manager());
        AtomicInteger readers = new AtomicInteger();
        AtomicInteger writers = new AtomicInteger();
        AtomicInteger maxReaders = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        AtomicInteger failures = new AtomicInteger();
        AtomicInteger writes = new AtomicInteger();
        CountDownLatch readersTogether = new CountDownLatch(2);
        for (int t = 0; t < 6; t++) {
            LockManager locks = managers.get(t % 2);
            boolean writer = t >= 4;
            start(() -> {
                try {
                    if (writer) {
                        // Readers first share the key, then writers join the fray.
                        readersTogether.await(BOUND.toMillis(), TimeUnit.MILLISECONDS);
                    }
                    for (int round = 0; round < 15; round++) {
                        try (LockHandle lease = locks.acquire(request("rw", writer ? LockKind.WRITE : LockKind.READ))) {
                            if (writer) {
                                if (writers.incrementAndGet() > 1 || readers.get() > 0) {
                                    violations.incrementAndGet();
                                }
                                writes.incrementAndGet();
                                Thread.yield();
                                writers.decrementAndGet();
                            } else {
                                maxReaders.accumulateAndGet(readers.incrementAndGet(), Math::max);
                                if (writers.get() > 0) {
                                    violations.incrementAndGet();
                                }
                                if (readersTogether.getCount() > 0) {
                                    readersTogether.countDown();
                                    readersTogether.await(BOUND.toMillis(), TimeUnit.MILLISECONDS);
                                }
                                Thread.yield();
                                readers.decrementAndGet();
                            }
                        }
                    }
                } catch (RuntimeException | InterruptedException e) {
                    failures.incrementAndGet();
                }
            });
        }
        joinAll();

        assertThat(failures).hasValue(0);
        assertThat(violations).hasValue(0);
        assertThat(writes).hasValue(30);
        assertThat(maxReaders.get()).isGreaterThanOrEqualTo(2);
    }

    @Test
    void fairWaitersOfThreeManagersGetTheLockInTheOrderTheyQueued() throws Exception {
        List<String> order = new CopyOnWriteArrayList<>();
        try (Jedis admin = server.admin()) {
            // A holder that dies: its lease runs out with no notice, and the last waiter to queue (told the shortest
            // remaining lease) asks first; the queue must still serve the first. Each then hands over by release notice.
            manager().backend().tryAcquire(LockKind.FAIR, "fair", "dying-holder", 1_500);
            for (int m = 1; m <= 3; m++) {
                LockManager locks = manager();
                String name = "manager-" + m;
                start(() -> {
                    try (LockHandle turn = locks.acquire(request("fair", LockKind.FAIR))) {
                        order.add(name);
                    }
                });
                int queued = m;
                await(name + " queued in the store", BOUND, () -> admin.zcard(keys.fairQueueKey("fair")) == queued);
            }
        }
        joinAll();

        assertThat(order).containsExactly("manager-1", "manager-2", "manager-3");
    }

    @Test
    void fairWaitersCutOffFromRedisDelayTheNextByOneWaiterTimeoutTogether() throws Exception {
        LockManager holderSide = manager();
        RespProxy proxy = RespProxy.start(server);
        closeAfterTest.add(proxy);
        LockManager doomed = manager(proxy.host(), proxy.port());
        try (Jedis admin = server.admin()) {
            LockHandle held = holderSide.acquire(request("fair", LockKind.FAIR));
            for (int d = 1; d <= 3; d++) {
                start(() -> {
                    try (LockHandle never = doomed.acquire(request("fair", LockKind.FAIR))) {
                        throw new AssertionError("a cut-off waiter cannot get the lock");
                    } catch (RuntimeException e) {
                        // Its store calls fail once cut off: the waiter is as good as dead.
                    }
                });
            }
            await("three doomed waiters queued", BOUND, () -> admin.zcard(keys.fairQueueKey("fair")) == 3);
            List<String> doomedPlaces = admin.zrange(keys.fairQueueKey("fair"), 0, -1);
            proxy.cutConnections();
            long cutAt = System.nanoTime();
            LockManager living = manager();
            long[] acquiredAt = new long[1];
            start(() -> {
                try (LockHandle turn = living.acquire(request("fair", LockKind.FAIR))) {
                    acquiredAt[0] = System.nanoTime();
                }
            });
            // Its place, not a count of four: on a loaded machine the doomed places may already have lapsed by then.
            await("the living waiter queued behind them", BOUND, () -> admin.zrange(keys.fairQueueKey("fair"), 0, -1).stream()
                    .anyMatch(place -> !doomedPlaces.contains(place)));
            held.close();
            joinAll();

            assertThat(acquiredAt[0]).as("the living waiter got the lock").isNotZero();
            assertThat(Duration.ofNanos(acquiredAt[0] - cutAt))
                    .as("three dead waiters cost one %s waiter timeout, not three", WAITER_TIMEOUT)
                    .isLessThan(WAITER_TIMEOUT.multipliedBy(3));
        }
    }

    @Test
    void aFairWaiterWaitingThreeWaiterTimeoutsKeepsItsPlace() throws Exception {
        LockManager holderSide = manager();
        LockManager patientSide = manager();
        LockManager lateSide = manager();
        List<String> order = new CopyOnWriteArrayList<>();
        try (Jedis admin = server.admin()) {
            LockHandle held = holderSide.acquire(request("fair", LockKind.FAIR));
            start(() -> {
                try (LockHandle turn = patientSide.acquire(request("fair", LockKind.FAIR))) {
                    order.add("patient");
                }
            });
            await("the patient waiter queued", BOUND, () -> admin.zcard(keys.fairQueueKey("fair")) == 1);
            long queuedAt = RedisLockKindsTest.serverMillis(admin);
            await("three waiter timeouts to pass", BOUND,
                    () -> RedisLockKindsTest.serverMillis(admin) - queuedAt > 3 * WAITER_TIMEOUT.toMillis());
            start(() -> {
                try (LockHandle turn = lateSide.acquire(request("fair", LockKind.FAIR))) {
                    order.add("late");
                }
            });
            await("the late waiter queued", BOUND, () -> admin.zcard(keys.fairQueueKey("fair")) == 2);
            held.close();
        }
        joinAll();

        assertThat(order).containsExactly("patient", "late");
    }

    private LockRequest request(String key, LockKind kind) {
        return LockRequest.builder(key).kind(kind).waitTime(BOUND).build();
    }

    private LockManager manager() {
        return manager(server.host(), server.port());
    }

    /** A manager over its own client and backend, as another JVM would have. */
    private LockManager manager(String host, int port) {
        RedisClient client = RedisTestSupport.client(host, port, CLIENT_TIMEOUT_MILLIS);
        RedisLockBackend backend = RedisLockBackend.builder(client).fairWaiterTimeout(WAITER_TIMEOUT).build();
        LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofSeconds(5)).build();
        closeAfterTest.add(client);
        closeAfterTest.add(backend);
        closeAfterTest.add(locks);
        return locks;
    }

    private void start(ThrowingRunnable work) {
        Thread thread = new Thread(() -> {
            try {
                work.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
    }

    private void joinAll() throws InterruptedException {
        for (Thread thread : threads) {
            thread.join(BOUND.toMillis() * 2);
            assertThat(thread.isAlive()).as("%s finished", thread.getName()).isFalse();
        }
    }

    @FunctionalInterface
    private interface ThrowingRunnable {
        void run() throws InterruptedException;
    }
}
