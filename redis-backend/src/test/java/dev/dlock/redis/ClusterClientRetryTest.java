package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/**
 * Jedis' cluster executor sends a command again when the reply of the first attempt did not arrive
 * in time (a read timeout is a connection error to it). A stalled server (SIGSTOP, resumed once the
 * client backs off after a timed-out attempt) then runs the same SET NX or script twice for the same
 * owner; the second run must give the answer the first would have given.
 */
class ClusterClientRetryTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private static final int SOCKET_TIMEOUT_MILLIS = 300;
    private static final long LEASE_MILLIS = 20_000;
    /** Where Jedis' cluster executor waits between attempts, after connection errors. */
    private static final String EXECUTOR = "redis.clients.jedis.executors.ClusterCommandExecutor";

    private static RedisServerProcess server;
    private static RedisClusterClient client;

    @BeforeAll
    static void start() {
        server = RedisServerProcess.startSingleNodeCluster();
        client = RedisClusterClient.builder()
                .nodes(Set.of(new HostAndPort(server.host(), server.port())))
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(SOCKET_TIMEOUT_MILLIS).build())
                .maxAttempts(5)
                .maxTotalRetriesDuration(Duration.ofSeconds(15))
                .build();
    }

    @AfterAll
    static void stop() throws Exception {
        RedisTestSupport.closeAll(client, server);
    }

    @Test
    void anAcquireRetriedAfterALostReplyIsAcquiredNotHeldByItsOwnOwner() throws Exception {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build(); Jedis admin = server.admin()) {
            warmUpScripts(backend);
            long scriptRunsBefore = scriptRuns();

            AcquireResult result = withARepliesLost(() -> backend.tryAcquire(LockKind.EXCLUSIVE, "retried-acquire", "me", LEASE_MILLIS));

            // The first SET NX took the key and its reply was lost; the client sent it again, which was refused (the key
            // exists), so the acquire script ran and found the key already this owner's.
            assertThat(scriptRuns() - scriptRunsBefore).as("acquire scripts after the retried SET NX").isGreaterThanOrEqualTo(1);
            assertThat(admin.get(KEYS.lockKey("retried-acquire"))).as("stored owner").isEqualTo("me");
            assertThat(result).as("answer to the owner whose first reply was lost (PTTL %s)",
                    admin.pttl(KEYS.lockKey("retried-acquire"))).isInstanceOf(AcquireResult.Acquired.class);
            long token = ((AcquireResult.Acquired) result).fencingToken();
            assertThat(backend.release(LockKind.EXCLUSIVE, "retried-acquire", "me", token)).isEqualTo(ReleaseResult.RELEASED);
            assertThat(admin.exists(KEYS.lockKey("retried-acquire"))).isFalse();
        }
    }

    @Test
    void aReleaseRetriedAfterALostReplyIsNeverReportedAsNotOwner() throws Exception {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build(); Jedis admin = server.admin()) {
            warmUpScripts(backend);
            long token = ((AcquireResult.Acquired) backend.tryAcquire(LockKind.EXCLUSIVE, "retried-release", "me", LEASE_MILLIS)).fencingToken();
            long scriptRunsBefore = scriptRuns();

            ReleaseResult result = withARepliesLost(() -> backend.release(LockKind.EXCLUSIVE, "retried-release", "me", token));

            assertThat(scriptRuns() - scriptRunsBefore).as("the client sent the release script again").isGreaterThanOrEqualTo(2);
            assertThat(result).isIn(ReleaseResult.RELEASED, ReleaseResult.ALREADY_FREE);
            assertThat(admin.exists(KEYS.lockKey("retried-release"))).isFalse();
        }
    }

    /** Runs every script once, so the stalled calls are EVALSHAs that the server knows. */
    private static void warmUpScripts(RedisLockBackend backend) {
        long token = ((AcquireResult.Acquired) backend.tryAcquire(LockKind.EXCLUSIVE, "warm-up", "w", 1_000)).fencingToken();
        backend.release(LockKind.EXCLUSIVE, "warm-up", "w", token);
    }

    private static long scriptRuns() {
        return server.commandCalls().getOrDefault("evalsha", 0L);
    }

    /**
     * Runs {@code call} on a thread of its own while the server is stopped (SIGSTOP), and lets the server run again
     * once the client backs off after a timed-out attempt: at least one attempt's reply was lost, whatever the
     * machine's load, and the server then runs it and the client's next attempt. The server runs again however
     * this ends.
     */
    private static <T> T withARepliesLost(Callable<T> call) throws Exception {
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try (RedisServerProcess.Stall stall = server.stall()) {
            CompletableFuture<Thread> thread = new CompletableFuture<>();
            Future<T> answer = caller.submit(() -> {
                thread.complete(Thread.currentThread());
                return call.call();
            });
            Thread calling = thread.get(10, TimeUnit.SECONDS);
            RedisTestSupport.await("the client to back off after a timed-out attempt", Duration.ofSeconds(30),
                    () -> backsOff(calling));
            stall.close();
            return answer.get(30, TimeUnit.SECONDS);
        } finally {
            caller.shutdownNow();
        }
    }

    /** Whether {@code thread} waits between two attempts of one command in Jedis' cluster executor. */
    private static boolean backsOff(Thread thread) {
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals(EXECUTOR) && frame.getMethodName().equals("sleep")) {
                return true;
            }
        }
        return false;
    }
}
