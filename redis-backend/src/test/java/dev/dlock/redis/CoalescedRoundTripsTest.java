package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;

import org.apache.commons.pool2.impl.GenericObjectPoolConfig;

import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * Scripts that threads send while another script to the same Redis is in flight wait and go out together,
 * in one pipeline on one connection, and each caller gets its own answer — also when the batch comes back
 * NOSCRIPT (the server lost its scripts) or its connection is cut. The proxy holds the first caller's reply,
 * so the others are certain to queue behind it; how many connections the proxy saw tells whether they
 * shared one. The callers take write locks, whose acquisition is a script (an exclusive one is a plain SET NX).
 */
class CoalescedRoundTripsTest {

    /** More callers than lanes, and a pool big enough for each to have a connection of its own. */
    private static final int CALLERS = 3 * ScriptCoalescer.LANES_PER_NODE;
    private static final long LEASE_MILLIS = 30_000;
    private static final LockKind KIND = LockKind.WRITE;
    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static RedisServerProcess server;

    @BeforeAll
    static void startServer() {
        server = RedisServerProcess.start();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @Test
    void callersQueuedBehindAnInFlightScriptShareOnePipelineAndEachGetsItsOwnAnswer() throws Exception {
        try (RespProxy proxy = RespProxy.start(server); Setup setup = new Setup(proxy, true, "shared")) {
            List<Future<AcquireResult>> acquisitions = setup.acquireWhileTheFirstReplyIsHeld();
            for (int i = 0; i < CALLERS; i++) {
                assertThat(acquisitions.get(i).get(10, TimeUnit.SECONDS)).as("caller " + i).isInstanceOf(AcquireResult.Acquired.class);
                assertThat(setup.ownerInRedis(i)).as("caller " + i + "'s key").isEqualTo(setup.owner(i));
            }
            // Each lane's first caller went straight out on a connection of its own; everyone who came while every
            // lane was busy queued and went out in its lane's next pipeline. Without coalescing each of the 24
            // callers would have borrowed a connection of its own.
            assertThat(proxy.openConnections()).as("connections the callers opened").isLessThanOrEqualTo(ScriptCoalescer.LANES_PER_NODE);
            assertThat(distinctTokens(acquisitions)).isEqualTo(CALLERS);
            for (int i = 0; i < CALLERS; i++) {
                assertThat(setup.backend.release(KIND, setup.key(i), setup.owner(i), token(acquisitions.get(i)))).isEqualTo(ReleaseResult.RELEASED);
            }
        }
    }

    @Test
    void aBatchAnsweredNoScriptIsRunAgainInFullByEachCaller() throws Exception {
        try (RespProxy proxy = RespProxy.start(server); Setup setup = new Setup(proxy, true, "flushed")) {
            List<Future<AcquireResult>> acquisitions = setup.acquireWhileTheFirstReplyIsHeld(() -> {
                try (Jedis admin = server.admin()) {
                    admin.scriptFlush();
                }
            });
            for (int i = 0; i < CALLERS; i++) {
                assertThat(acquisitions.get(i).get(10, TimeUnit.SECONDS)).as("caller " + i).isInstanceOf(AcquireResult.Acquired.class);
                assertThat(setup.ownerInRedis(i)).isEqualTo(setup.owner(i));
            }
        }
    }

    @Test
    void aCutConnectionFailsTheCallersInFlightAndLeavesNoKeyLocked() throws Exception {
        try (RespProxy proxy = RespProxy.start(server); Setup setup = new Setup(proxy, true, "cut")) {
            List<Future<AcquireResult>> acquisitions = setup.acquireWhileTheFirstReplyIsHeld(proxy::cutConnections);
            proxy.acceptConnections();
            int failed = 0;
            for (int i = 0; i < CALLERS; i++) {
                try {
                    AcquireResult result = acquisitions.get(i).get(10, TimeUnit.SECONDS);
                    assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
                    assertThat(setup.ownerInRedis(i)).isEqualTo(setup.owner(i));
                } catch (java.util.concurrent.ExecutionException e) {
                    assertThat(e.getCause()).isInstanceOf(LockBackendException.class);
                    failed++;
                    if (i >= ScriptCoalescer.LANES_PER_NODE) {
                        // Queued callers never reached Redis (the connection was refused): nothing of theirs is held.
                        // The first callers' scripts ran before their replies were lost; their keys are held until the
                        // lease ends.
                        assertThat(setup.ownerInRedis(i)).as("caller " + i + "'s key after a failed acquire").isNull();
                    }
                }
            }
            assertThat(failed).as("callers whose reply the cut lost").isPositive();
        }
    }

    private static long token(Future<AcquireResult> acquisition) throws Exception {
        return ((AcquireResult.Acquired) acquisition.get()).fencingToken();
    }

    private static long distinctTokens(List<Future<AcquireResult>> acquisitions) throws Exception {
        List<Long> tokens = new ArrayList<>();
        for (Future<AcquireResult> acquisition : acquisitions) {
            tokens.add(token(acquisition));
        }
        return tokens.stream().distinct().count();
    }

    /** A backend through the proxy, and callers on distinct keys. */
    private static final class Setup implements AutoCloseable {
        final RedisClient client;
        final RedisLockBackend backend;
        final ExecutorService callers = Executors.newFixedThreadPool(CALLERS);
        final RespProxy proxy;
        final String prefix;

        Setup(RespProxy proxy, boolean coalesce, String prefix) {
            this.proxy = proxy;
            this.prefix = prefix + System.nanoTime() + ":";
            GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
            pool.setMaxTotal(4 * CALLERS);
            this.client = RedisClient.builder().hostAndPort(proxy.host(), proxy.port())
                    .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(5_000).build()).poolConfig(pool).build();
            this.backend = RedisLockBackend.builder(client).coalesceRoundTrips(coalesce).build();
        }

        String key(int i) {
            return prefix + i;
        }

        String owner(int i) {
            return "owner-" + i;
        }

        String ownerInRedis(int i) {
            try (Jedis admin = server.admin()) {
                return admin.get(KEYS.writerKey(key(i)));
            }
        }

        List<Future<AcquireResult>> acquireWhileTheFirstReplyIsHeld() throws InterruptedException {
            return acquireWhileTheFirstReplyIsHeld(() -> {
            });
        }

        /**
         * The first {@link ScriptCoalescer#LANES_PER_NODE} callers' scripts reach Redis, one per lane, and their
         * replies are held; the other callers start and queue; then {@code meanwhile} runs and the replies flow again.
         */
        List<Future<AcquireResult>> acquireWhileTheFirstReplyIsHeld(Runnable meanwhile) throws InterruptedException {
            // Load the scripts once, so that the held call is the acquire itself and not a NOSCRIPT retry.
            backend.tryAcquire(KIND, "warm-up", "nobody", LEASE_MILLIS);
            backend.release(KIND, "warm-up", "nobody", 0);
            proxy.holdReplies();
            long commandsBefore = proxy.commandCount();
            List<Future<AcquireResult>> acquisitions = new ArrayList<>();
            List<Thread> queued = new ArrayList<>();
            for (int i = 0; i < CALLERS; i++) {
                int caller = i;
                acquisitions.add(callers.submit(() -> {
                    if (caller >= ScriptCoalescer.LANES_PER_NODE) {
                        synchronized (queued) {
                            queued.add(Thread.currentThread());
                            queued.notifyAll();
                        }
                    }
                    return backend.tryAcquire(KIND, key(caller), owner(caller), LEASE_MILLIS);
                }));
                if (i == 0) {
                    // Caller 0 reuses the warm-up's pooled connection: its script arriving shows it took a lane.
                    awaitThroughProxy("caller 0's script", () -> proxy.commandCount() > commandsBefore);
                } else if (i < ScriptCoalescer.LANES_PER_NODE) {
                    // Every other lane opens a connection of its own once its caller took it.
                    int lanesTaken = i + 1;
                    awaitThroughProxy(lanesTaken + " lanes taken", () -> proxy.openConnections() >= lanesTaken);
                }
            }
            awaitParked(queued);
            meanwhile.run();
            proxy.releaseReplies();
            return acquisitions;
        }

        private static void awaitThroughProxy(String what, java.util.function.BooleanSupplier seen) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!seen.getAsBoolean()) {
                assertThat(System.nanoTime()).as(what).isLessThan(deadline);
                Thread.sleep(5);
            }
        }

        /** Waits until every queued caller is parked: it found a batch in flight and waits for its turn. */
        private void awaitParked(List<Thread> queued) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                int parked = 0;
                synchronized (queued) {
                    for (Thread thread : queued) {
                        if (thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING) {
                            parked++;
                        }
                    }
                }
                if (parked == CALLERS - ScriptCoalescer.LANES_PER_NODE) {
                    return;
                }
                assertThat(System.nanoTime()).as(parked + " callers queued").isLessThan(deadline);
                Thread.sleep(5);
            }
        }

        @Override
        public void close() {
            callers.shutdownNow();
            backend.close();
            client.close();
        }
    }
}
