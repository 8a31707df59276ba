package dev.dlock.redis;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import dev.dlock.testkit.RecordingBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine's safety promises against a real Redis: re-entry never hands out a released or run-out
 * lease, "held" means the store cannot have let the key go, one stalled or failing renewal does not
 * take other leases with it, waiters keep their arrival place, and a release whose outcome is
 * unknown is never reported as done.
 */
class EngineSafetyTest {

    private static RedisServerProcess redis;
    private static RedisClient client;
    private final List<AutoCloseable> closeAfterTest = new ArrayList<>();

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
        client = RedisTestSupport.client(redis);
    }

    @AfterAll
    static void stopRedis() throws Exception {
        RedisTestSupport.closeAll(client, redis);
    }

    @AfterEach
    void closeResources() throws Exception {
        for (int i = closeAfterTest.size() - 1; i >= 0; i--) {
            closeAfterTest.get(i).close();
        }
        if (!redis.isRunning()) {
            redis.restart();
        }
    }

    private LockManager manager(RedisClient over, Duration lease) {
        RedisLockBackend backend = RedisLockBackend.builder(over).build();
        return manager(new RecordingBackend(backend), lease, backend);
    }

    private LockManager manager(RecordingBackend recording, Duration lease, AutoCloseable backend, LockListener... listeners) {
        LockManager.Builder builder = LockManager.builder(recording).leaseTime(lease);
        for (LockListener listener : listeners) {
            builder.listener(listener);
        }
        LockManager locks = builder.build();
        closeAfterTest.add(backend);
        closeAfterTest.add(locks);
        return locks;
    }

    private static String freshKey(String name) {
        return name + ":" + System.nanoTime();
    }

    // ------------------------------------------------------------------ re-entry

    /**
     * Item 3: the owner thread re-enters while another thread closes its outer handle. Both queue on
     * the lease's monitor (held by a third thread), so the close's steps and the re-entry interleave
     * as the scheduler pleases. Whatever the order, the owner must end up with a handle on a lease
     * that is really held, never on one released under it.
     */
    @Test
    void reentryRacingACloseFromAnotherThreadNeverGetsAReleasedLease() throws Exception {
        LockManager locks = manager(client, Duration.ofSeconds(30));
        LockManager other = manager(client, Duration.ofSeconds(30));
        String key = freshKey("reentry-race");
        Thread owner = Thread.currentThread();
        for (int i = 0; i < 300; i++) {
            LockHandle outer = locks.acquire(key, Duration.ofSeconds(5));
            Object lease = leaseOf(outer);
            CountDownLatch monitorHeld = new CountDownLatch(1);
            AtomicReference<Throwable> closeFailure = new AtomicReference<>();
            Thread closer = new Thread(() -> {
                try {
                    outer.close();
                } catch (Throwable t) {
                    closeFailure.set(t);
                }
            });
            Thread blocker = new Thread(() -> {
                synchronized (lease) {
                    monitorHeld.countDown();
                    closer.start();
                    awaitBlocked(closer);
                    awaitBlocked(owner);
                }
            });
            blocker.start();
            monitorHeld.await();
            Optional<LockHandle> again = locks.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(5)).build());
            closer.join();
            blocker.join();
            assertThat(closeFailure.get()).as("closing the outer handle, iteration %d", i).isNull();
            assertThat(again).as("the owner got the key again, iteration %d", i).isPresent();
            LockHandle inner = again.get();
            assertThat(inner.isHeld()).as("the owner's handle is held after the outer close, iteration %d (%s)", i, inner).isTrue();
            assertThat(other.tryAcquire(key)).as("another manager got the key the owner holds, iteration %d", i).isEmpty();
            inner.close();
        }
    }

    private static void awaitBlocked(Thread thread) {
        await(thread.getName() + " blocked on the lease's monitor", Duration.ofSeconds(10),
                () -> thread.getState() == Thread.State.BLOCKED);
    }

    private static Object leaseOf(LockHandle handle) throws ReflectiveOperationException {
        Field field = handle.getClass().getDeclaredField("lease");
        field.setAccessible(true);
        return field.get(handle);
    }

    /** Item 4: a fixed lease that ran out (and was taken by another manager) is not re-entered with zero store calls. */
    @Test
    void reenteringARunOutFixedLeaseIsRefused() {
        LockManager locks = manager(client, Duration.ofSeconds(30));
        LockManager other = manager(client, Duration.ofSeconds(30));
        String key = freshKey("fixed-reentry");
        LockHandle outer = locks.acquire(LockRequest.builder(key).leaseTime(Duration.ofMillis(200)).waitTime(Duration.ZERO).build());
        long firstToken = outer.fencingToken();
        try (LockHandle taken = other.acquire(key, Duration.ofSeconds(10))) {
            assertThat(taken.fencingToken()).isGreaterThan(firstToken);
            assertThatThrownBy(() -> locks.tryAcquire(LockRequest.builder(key).leaseTime(Duration.ofMillis(200)).build()))
                    .as("re-entering a fixed lease another manager has taken over")
                    .isInstanceOf(LockLostException.class)
                    .hasMessageContaining(key)
                    .hasMessageContaining("ran out");
        }
        assertThat(outer.isHeld()).isFalse();
        assertThat(outer.state()).isEqualTo(LockState.LOST);
        assertThatThrownBy(outer::close).isInstanceOf(LockLostException.class);
    }

    // ------------------------------------------------------------------ the watchdog

    /**
     * Item 8: with the store stalled longer than the lease, the holder stops being told "held" when
     * the lease may have run out — while the stalled renewal is still waiting — and the stall is
     * visible on the manager.
     */
    @Test
    void aStalledStoreEndsHeldAtTheLeasesExpiryNotWhenTheStalledCallReturns() throws Exception {
        // A client that waits out the stall, as one with a generous socket timeout does.
        RedisClient patient = RedisClient.builder().hostAndPort(redis.host(), redis.port())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(10_000).build()).build();
        closeAfterTest.add(patient);
        LockManager locks = manager(patient, Duration.ofMillis(300));
        String key = freshKey("stalled");
        LockHandle handle = locks.acquire(key, Duration.ZERO);
        await("a first renewal", Duration.ofSeconds(5), () -> locks.watchdogRenewCallCount() > 0);

        Thread sleeper = stallServer(redis, 3);
        await("the lease to read as lost while Redis sleeps", Duration.ofSeconds(2), () -> !handle.isHeld());
        assertThat(sleeper.isAlive()).as("Redis is still asleep when the holder is told").isTrue();
        assertThat(handle.state()).isEqualTo(LockState.LOST);
        await("the stalled renewal call to be reported", Duration.ofSeconds(2), () -> locks.watchdogStalledCalls() == 1);
        assertThat(sleeper.isAlive()).as("Redis is still asleep when the stall is reported").isTrue();
        sleeper.join();

        await("the stall to clear", Duration.ofSeconds(5), () -> locks.watchdogStalledCalls() == 0);
        assertThat(locks.watchdogStallCount()).isGreaterThanOrEqualTo(1);
        assertThatThrownBy(handle::close).isInstanceOf(LockLostException.class);
        try (LockHandle again = locks.acquire(key, Duration.ofSeconds(5))) {
            assertThat(again.isHeld()).isTrue();
        }
    }

    /**
     * Suspends the Redis process (SIGSTOP) for {@code seconds} — a stalled server: connections stay
     * open, nothing answers — and returns once it no longer answers; the returned thread resumes it.
     */
    static Thread stallServer(RedisServerProcess server, int seconds) {
        server.suspend();
        Thread resumer = new Thread(() -> {
            try {
                Thread.sleep(seconds * 1000L);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                server.resume();
            }
        }, "redis-resumer");
        resumer.start();
        return resumer;
    }

    /** A renewal call that dies with an Error must not leave its leases without renewals. */
    @Test
    void aRenewalCallDyingWithAnErrorLeavesItsLeaseRenewed() {
        RedisLockBackend backend = RedisLockBackend.builder(client).build();
        RecordingBackend recording = new RecordingBackend(backend);
        AtomicInteger errorsLeft = new AtomicInteger(2);
        recording.beforeRenew(batch -> {
            if (errorsLeft.getAndDecrement() > 0) {
                throw new StackOverflowError("injected: a renewal call dies with an Error");
            }
        });
        List<String> lost = new CopyOnWriteArrayList<>();
        LockManager locks = manager(recording, Duration.ofMillis(600), backend, new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                lost.add(key);
            }
        });
        LockManager other = manager(client, Duration.ofSeconds(30));
        String key = freshKey("renewer-error");
        try (LockHandle handle = locks.acquire(key, Duration.ZERO)) {
            await("renewals after the injected Errors", Duration.ofSeconds(10), () -> recording.renewalsOf(key) >= 6);
            assertThat(lost).as("leases reported lost").isEmpty();
            assertThat(handle.isHeld()).isTrue();
            assertThat(other.tryAcquire(key)).as("another manager got the key").isEmpty();
        }
    }

    // ------------------------------------------------------------------ waiting

    /** Item 9: a waiter that checks an abort condition keeps the place it arrived at. */
    @Test
    void aWaiterCheckingItsAbortConditionKeepsItsPlace() throws Exception {
        LockManager locks = manager(client, Duration.ofSeconds(30));
        String key = freshKey("fifo");
        List<String> order = new CopyOnWriteArrayList<>();
        AtomicInteger abortChecks = new AtomicInteger();
        LockHandle holder = locks.acquire(key, Duration.ZERO);

        Thread early = waiter(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(30))
                .abortIf(() -> {
                    abortChecks.incrementAndGet();
                    return false;
                }).abortCheckInterval(Duration.ofMillis(10)).build(), "early", order);
        await("the early waiter to check its abort condition", Duration.ofSeconds(5), () -> abortChecks.get() >= 2);
        Thread late = waiter(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(30)).build(), "late", order);
        await("the late waiter to queue", Duration.ofSeconds(5), () -> late.getState() == Thread.State.TIMED_WAITING);
        int checksWhenLateQueued = abortChecks.get();
        await("the early waiter to check its abort condition again", Duration.ofSeconds(5),
                () -> abortChecks.get() >= checksWhenLateQueued + 3);

        holder.close();
        early.join(10_000);
        late.join(10_000);
        assertThat(order).containsExactly("early", "late");
    }

    private static Thread waiter(LockManager locks, LockRequest request, String name, List<String> order) {
        Thread thread = new Thread(() -> {
            try (LockHandle handle = locks.acquire(request)) {
                order.add(name);
            }
        }, name);
        thread.start();
        return thread;
    }

    // ------------------------------------------------------------------ release

    /**
     * Item 11: Redis restarts without persistence while the holder works, another application takes
     * the key from the empty server, and the holder's release first meets a pooled connection the
     * restart closed. The holder must be told its lease was lost, not returned to as if all went well.
     */
    @Test
    void aReleaseAfterAQuickRestartTellsTheHolderItsLeaseWasTaken() throws Exception {
        RedisServerProcess own = RedisServerProcess.start();
        closeAfterTest.add(own);
        RedisClient holderClient = RedisTestSupport.client(own);
        RedisClient otherClient = RedisTestSupport.client(own);
        closeAfterTest.add(holderClient);
        closeAfterTest.add(otherClient);
        LockManager holder = manager(holderClient, Duration.ofSeconds(30));
        LockManager otherApp = manager(otherClient, Duration.ofSeconds(30));
        String key = freshKey("restart");

        LockHandle handle = holder.acquire(key, Duration.ZERO);
        own.restart();
        LockHandle taken = RedisTestSupport.retrying(Duration.ofSeconds(5), () -> otherApp.acquire(key, Duration.ZERO));
        assertThatThrownBy(handle::close).as("the holder's release after its key was taken")
                .isInstanceOf(LockLostException.class)
                .hasMessageContaining(key);
        assertThat(taken.isHeld()).isTrue();
        taken.close();
    }

    /** Item 11: when the store stays unreachable, the release says that its outcome is unknown. */
    @Test
    void aReleaseThatCannotReachTheStoreSaysTheOutcomeIsUnknown() {
        RedisServerProcess own = RedisServerProcess.start();
        closeAfterTest.add(own);
        RedisClient holderClient = RedisTestSupport.client(own);
        closeAfterTest.add(holderClient);
        LockManager holder = manager(holderClient, Duration.ofSeconds(30));
        String key = freshKey("unreachable");
        LockHandle handle = holder.acquire(key, Duration.ZERO);
        own.kill();
        assertThatThrownBy(handle::close)
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("outcome is unknown");
        assertThat(handle.isHeld()).isFalse();
    }

    /** A release whose first reply is lost but which did delete the key is a normal release, not a lost lease. */
    @Test
    void aRepeatedReleaseOfALiveLeaseIsNotReportedLost() {
        RedisLockBackend backend = RedisLockBackend.builder(client).build();
        RecordingBackend recording = new RecordingBackend(backend);
        LockManager locks = manager(recording, Duration.ofSeconds(30), backend);
        String key = freshKey("repeated-release");
        LockHandle handle = locks.acquire(key, Duration.ZERO);
        // The store already freed the key for this owner (as a first attempt whose reply was lost would have).
        assertThat(backend.release(key, ownerOf(key), handle.fencingToken())).isEqualTo(dev.dlock.core.ReleaseResult.RELEASED);
        handle.close();
        AtomicBoolean free = new AtomicBoolean();
        try (LockHandle again = locks.acquire(key, Duration.ZERO)) {
            free.set(again.isHeld());
        }
        assertThat(free).isTrue();
    }

    private static String ownerOf(String key) {
        try (Jedis admin = redis.admin()) {
            return admin.get(new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX).lockKey(key));
        }
    }
}
