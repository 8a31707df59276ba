package dev.dlock.redis;

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

import dev.dlock.core.AcquireResult;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.ReleaseResult;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * Scripts that threads send while another script to the same Redis is in flight wait and go out together,
 * in one pipeline on one connection, and each caller gets its own answer — also when the batch comes back
 * NOSCRIPT (the server lost its scripts) or its connection is cut. The proxy holds the first caller's reply,
 * so the others are certain to queue behind it; how many connections the proxy saw tells whether they
 * shared one.
 */
class CoalescedRoundTripsTest {

    private static final int CALLERS = 16;
    private static final long LEASE_MILLIS = 30_000;

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
            // One connection carried the first script, then the fifteen others in one pipeline; without
            // coalescing each queued caller borrows a connection of its own (up to the pool's 8).
            assertThat(proxy.openConnections()).as("connections the callers opened").isEqualTo(1);
            assertThat(distinctTokens(acquisitions)).isEqualTo(CALLERS);
            for (int i = 0; i < CALLERS; i++) {
                assertThat(setup.backend.release(setup.key(i), setup.owner(i), token(acquisitions.get(i)))).isEqualTo(ReleaseResult.RELEASED);
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
                    if (i > 0) {
                        // Queued callers never reached Redis (the connection was refused): nothing of theirs is held.
                        // Caller 0's script ran before its reply was lost; its key is held until the lease ends.
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
            this.client = RedisTestSupport.client(proxy.host(), proxy.port(), 5_000);
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
                return admin.get(RedisLockBackend.DEFAULT_KEY_PREFIX + "{" + key(i) + "}");
            }
        }

        List<Future<AcquireResult>> acquireWhileTheFirstReplyIsHeld() throws InterruptedException {
            return acquireWhileTheFirstReplyIsHeld(() -> {
            });
        }

        /**
         * Caller 0's script reaches Redis but its reply is held; callers 1..15 start and queue; then
         * {@code meanwhile} runs and the replies flow again.
         */
        List<Future<AcquireResult>> acquireWhileTheFirstReplyIsHeld(Runnable meanwhile) throws InterruptedException {
            // Load the script once, so that the held call is the acquire itself and not a NOSCRIPT retry.
            backend.release("warm-up", "nobody", 0);
            proxy.holdReplies();
            long commandsBefore = proxy.commandCount();
            List<Future<AcquireResult>> acquisitions = new ArrayList<>();
            List<Thread> queued = new ArrayList<>();
            for (int i = 0; i < CALLERS; i++) {
                int caller = i;
                acquisitions.add(callers.submit(() -> {
                    if (caller > 0) {
                        synchronized (queued) {
                            queued.add(Thread.currentThread());
                            queued.notifyAll();
                        }
                    }
                    return backend.tryAcquire(key(caller), owner(caller), LEASE_MILLIS);
                }));
                if (i == 0) {
                    awaitCommandsThroughProxy(commandsBefore + 1);
                }
            }
            awaitParked(queued);
            meanwhile.run();
            proxy.releaseReplies();
            return acquisitions;
        }

        private void awaitCommandsThroughProxy(long commands) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (proxy.commandCount() < commands) {
                assertThat(System.nanoTime()).as("the first caller's script reached the proxy").isLessThan(deadline);
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
                if (parked == CALLERS - 1) {
                    return;
                }
                assertThat(System.nanoTime()).as(parked + " of " + (CALLERS - 1) + " callers queued").isLessThan(deadline);
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
