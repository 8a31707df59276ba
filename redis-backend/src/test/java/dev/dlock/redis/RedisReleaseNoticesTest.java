package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseNotices.Subscription;
import dev.dlock.testkit.ThreadWaits;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/** Release notices over the backend's single pub/sub connection, against a real Redis. */
class RedisReleaseNoticesTest {

    private static final Duration BOUND = Duration.ofSeconds(10);

    private final RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private RedisServerProcess server;
    private RedisClient client;
    private RedisLockBackend backend;
    private ReleaseNotices notices;

    @BeforeEach
    void start() {
        server = RedisServerProcess.start();
        client = RedisTestSupport.client(server);
        backend = RedisLockBackend.builder(client).build();
        notices = backend.capabilities().releaseNotices().orElseThrow();
    }

    @AfterEach
    void stop() {
        backend.close();
        client.close();
        server.close();
    }

    @Test
    void releaseNoticeReachesTheSubscriber() throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        try (Subscription subscription = notices.subscribe("order-1", released::countDown)) {
            assertThat(subscription.awaitActive(BOUND)).isTrue();
            assertThat(subscription.isActive()).isTrue();

            backend.tryAcquire(LockKind.EXCLUSIVE, "order-1", "a", 10_000);
            RedisTestSupport.askAsAnotherOwner(backend, "order-1");
            backend.release(LockKind.EXCLUSIVE, "order-1", "a", 0);

            assertThat(released.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        }
    }

    @Test
    void noticeForAnotherKeyOrAFailedReleaseDoesNotWakeTheListener() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        CountDownLatch other = new CountDownLatch(1);
        try (Subscription subscription = notices.subscribe("mine", calls::incrementAndGet);
             Subscription otherSubscription = notices.subscribe("other", other::countDown)) {
            assertThat(subscription.awaitActive(BOUND)).isTrue();
            assertThat(otherSubscription.awaitActive(BOUND)).isTrue();
            backend.tryAcquire(LockKind.EXCLUSIVE, "mine", "a", 10_000);
            RedisTestSupport.askAsAnotherOwner(backend, "mine");
            backend.release(LockKind.EXCLUSIVE, "mine", "not-the-owner", 0);
            backend.tryAcquire(LockKind.EXCLUSIVE, "other", "a", 10_000);
            RedisTestSupport.askAsAnotherOwner(backend, "other");
            backend.release(LockKind.EXCLUSIVE, "other", "a", 0);

            // Messages on one connection arrive in order: once "other" is seen, "mine" would have been seen too.
            assertThat(other.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            assertThat(calls).hasValue(0);
        }
    }

    @Test
    void everyListenerOfAKeyIsCalledAndAThrowingOneDoesNotStopTheOthers() throws Exception {
        CountDownLatch both = new CountDownLatch(2);
        try (Subscription throwing = notices.subscribe("shared", () -> {
                 both.countDown();
                 throw new IllegalStateException("listener bug");
             });
             Subscription second = notices.subscribe("shared", both::countDown)) {
            assertThat(throwing.awaitActive(BOUND)).isTrue();
            assertThat(second.awaitActive(BOUND)).isTrue();

            backend.tryAcquire(LockKind.EXCLUSIVE, "shared", "a", 10_000);
            RedisTestSupport.askAsAnotherOwner(backend, "shared");
            backend.release(LockKind.EXCLUSIVE, "shared", "a", 0);

            assertThat(both.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            // The subscriber survived the throwing listener.
            CountDownLatch again = new CountDownLatch(1);
            try (Subscription third = notices.subscribe("shared", again::countDown)) {
                assertThat(third.awaitActive(BOUND)).isTrue();
                backend.tryAcquire(LockKind.EXCLUSIVE, "shared", "b", 10_000);
                RedisTestSupport.askAsAnotherOwner(backend, "shared");
                backend.release(LockKind.EXCLUSIVE, "shared", "b", 0);
                assertThat(again.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            }
        }
    }

    @Test
    void channelIsSubscribedWhileAtLeastOneListenerWantsIt() throws Exception {
        String channel = keys.releaseChannel("order-2");
        Subscription first = notices.subscribe("order-2", () -> { });
        Subscription second = notices.subscribe("order-2", () -> { });
        assertThat(first.awaitActive(BOUND)).isTrue();
        assertThat(second.awaitActive(BOUND)).isTrue();
        assertThat(subscribers(channel)).isEqualTo(1);
        assertThat(subscribers(keys.controlChannel())).isEqualTo(1);

        first.close();
        assertThat(first.isActive()).isFalse();
        assertThat(second.isActive()).isTrue();
        assertThat(subscribers(channel)).isEqualTo(1);

        second.close();
        await("channel to be unsubscribed", BOUND, () -> subscribers(channel) == 0);

        Subscription third = notices.subscribe("order-2", () -> { });
        assertThat(third.awaitActive(BOUND)).isTrue();
        assertThat(subscribers(channel)).isEqualTo(1);
        third.close();
    }

    @Test
    void manyKeysShareOnePubSubConnection() throws Exception {
        long clientsBefore = connectedClients();
        Subscription[] subscriptions = new Subscription[50];
        for (int i = 0; i < subscriptions.length; i++) {
            subscriptions[i] = notices.subscribe("key-" + i, () -> { });
        }
        for (Subscription subscription : subscriptions) {
            assertThat(subscription.awaitActive(BOUND)).isTrue();
        }
        // At most the one subscriber connection was added (the pool may already hold idle connections).
        assertThat(connectedClients()).isLessThanOrEqualTo(clientsBefore + 1);
        for (Subscription subscription : subscriptions) {
            subscription.close();
        }
    }

    @Test
    void listenersAreCalledWhenTheConnectionDropsAndAgainWhenItIsBack() throws Exception {
        CountDownLatch lost = new CountDownLatch(1);
        CountDownLatch reconnected = new CountDownLatch(2);
        CountDownLatch releasedAfterRestart = new CountDownLatch(3);
        AtomicInteger calls = new AtomicInteger();
        Subscription subscription = notices.subscribe("order-3", () -> {
            calls.incrementAndGet();
            lost.countDown();
            reconnected.countDown();
            releasedAfterRestart.countDown();
        });
        try (subscription) {
            assertThat(subscription.awaitActive(BOUND)).isTrue();

            server.kill();
            // Waiters must hear of the loss at once, not when the server is back.
            assertThat(lost.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("listener called on connection loss").isTrue();
            await("subscription to turn inactive", BOUND, () -> !subscription.isActive());
            assertThat(calls).hasValue(1);
            server.restart();

            assertThat(reconnected.await(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                    .as("listener called again after reconnect (notices may have been missed)").isTrue();
            assertThat(subscription.awaitActive(BOUND)).isTrue();
            assertThat(calls).hasValue(2);

            RedisTestSupport.retrying(BOUND, () -> backend.tryAcquire(LockKind.EXCLUSIVE, "order-3", "a", 10_000));
            RedisTestSupport.askAsAnotherOwner(backend, "order-3");
            RedisTestSupport.retrying(BOUND, () -> backend.release(LockKind.EXCLUSIVE, "order-3", "a", 0));

            assertThat(releasedAfterRestart.await(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                    .as("release notice after restart").isTrue();
            assertThat(calls).hasValue(3);
        }
    }

    @Test
    void subscribingWhileRedisIsDownBecomesActiveOnceItIsBack() throws Exception {
        try (Subscription warm = notices.subscribe("warm", () -> { })) {
            assertThat(warm.awaitActive(BOUND)).isTrue();
            server.kill();
            Subscription late = notices.subscribe("late", () -> { });
            assertThat(late.awaitActive(Duration.ofMillis(200))).isFalse();
            server.restart();
            assertThat(late.awaitActive(BOUND)).isTrue();
            assertThat(warm.awaitActive(BOUND)).isTrue();
            late.close();
        }
    }

    @Test
    void aCallerWaitingForItsChannelToComeUpHoldsNoMonitor() throws Exception {
        // A monitor wait pins a virtual thread to its carrier on JDK 21 to 23, for as long as the channel takes (up
        // to a waiter's whole subscribe wait while the server does not answer); a j.u.c. condition does not.
        try (Subscription warm = notices.subscribe("warm", () -> { })) {
            assertThat(warm.awaitActive(BOUND)).isTrue();
            Subscription late;
            FutureTask<Boolean> cameUp;
            try (RedisServerProcess.Stall stall = server.stall()) {
                // The SUBSCRIBE reaches the stopped server's socket and waits there for an answer.
                late = notices.subscribe("late", () -> { });
                cameUp = new FutureTask<>(() -> late.awaitActive(Duration.ofSeconds(60)));
                Thread waiter = new Thread(cameUp, "waiting-for-its-channel");
                waiter.start();
                ThreadWaits.assertWaitsHoldingNoMonitor(ThreadWaits.awaitTimedWaiting(waiter, BOUND));
            }
            assertThat(cameUp.get(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("the channel came up once the server ran again").isTrue();
            late.close();
        }
    }

    @Test
    void closingTheBackendStopsTheSubscriber() throws Exception {
        // Only this backend's subscriber: a backend another test class left open in this JVM has its own.
        Set<Thread> earlier = noticeThreads();
        Subscription subscription = notices.subscribe("order-4", () -> { });
        assertThat(subscription.awaitActive(BOUND)).isTrue();

        backend.close();

        assertThat(subscription.isActive()).isFalse();
        await("subscriber connection to close", BOUND, () -> subscribers(keys.controlChannel()) == 0);
        assertThat(noticeThreads()).as("release notice threads still alive").isSubsetOf(earlier);
        assertThatThrownBy(() -> notices.subscribe("order-4", () -> { }))
                .isInstanceOf(IllegalStateException.class);
        assertThat(client.ping()).isEqualTo("PONG");
    }

    private static Set<Thread> noticeThreads() {
        Set<Thread> threads = new HashSet<>();
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.getName().equals("dlock-redis-release-notices") && thread.isAlive()) {
                threads.add(thread);
            }
        }
        return threads;
    }

    private long subscribers(String channel) {
        try (Jedis admin = server.admin()) {
            Map<String, Long> counts = admin.pubsubNumSub(channel);
            return counts.getOrDefault(channel, 0L);
        }
    }

    private long connectedClients() {
        try (Jedis admin = server.admin()) {
            for (String line : admin.info("clients").split("\r?\n")) {
                if (line.startsWith("connected_clients:")) {
                    // Minus the admin connection asking.
                    return Long.parseLong(line.substring("connected_clients:".length()).trim()) - 1;
                }
            }
        }
        throw new AssertionError("no connected_clients in INFO clients");
    }
}
