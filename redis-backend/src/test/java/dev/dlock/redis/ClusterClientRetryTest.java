package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.exceptions.JedisConnectionException;

/**
 * Jedis' cluster executor sends a command again when the reply of the first attempt did not arrive
 * in time (a read timeout is a connection error to it). A stalled server ({@code DEBUG SLEEP}) then
 * runs the same SET NX or script twice for the same owner; the second run must give the answer the first
 * would have given.
 */
class ClusterClientRetryTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private static final int SOCKET_TIMEOUT_MILLIS = 300;
    private static final String STALL_SECONDS = "1";
    private static final long LEASE_MILLIS = 20_000;
    private static final ProtocolCommand DEBUG = () -> "DEBUG".getBytes(StandardCharsets.US_ASCII);

    private static RedisServerProcess server;
    private static RedisClusterClient client;

    @BeforeAll
    static void start() {
        server = startSingleNodeClusterWithDebugCommand();
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

            CompletableFuture<?> stall = stallServer();
            AcquireResult result = backend.tryAcquire(LockKind.EXCLUSIVE, "retried-acquire", "me", LEASE_MILLIS);
            stall.get(10, TimeUnit.SECONDS);

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

            CompletableFuture<?> stall = stallServer();
            ReleaseResult result = backend.release(LockKind.EXCLUSIVE, "retried-release", "me", token);
            stall.get(10, TimeUnit.SECONDS);

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
     * Sends {@code DEBUG SLEEP} on a connection of its own and returns once the server is asleep: a
     * PING on a third connection goes unanswered. The future ends when the server wakes up.
     */
    private static CompletableFuture<?> stallServer() {
        Jedis sleeper = server.admin();
        CompletableFuture<?> stall = CompletableFuture.runAsync(() -> {
            try (sleeper) {
                sleeper.sendCommand(DEBUG, "SLEEP", STALL_SECONDS);
            }
        });
        RedisTestSupport.await("the server asleep (a PING left unanswered)", Duration.ofSeconds(10), () -> {
            try (Jedis probe = new Jedis(server.host(), server.port(), DefaultJedisClientConfig.builder()
                    .timeoutMillis(100).build())) {
                probe.ping();
                return false;
            } catch (JedisConnectionException e) {
                return true;
            }
        });
        return stall;
    }

    /**
     * A one-node cluster owning every slot, with {@code DEBUG} allowed from loopback: Redis 7 refuses
     * it by default, and Redis 6.2 (the embedded binary on a machine without Redis) knows no such option.
     */
    private static RedisServerProcess startSingleNodeClusterWithDebugCommand() {
        List<String> arguments = new java.util.ArrayList<>(List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"));
        if (ClusterNodes.majorVersion("redis_version:" + binaryVersion()) >= 7) {
            arguments.addAll(List.of("--enable-debug-command", "local"));
        }
        RedisServerProcess node = RedisServerProcess.start(arguments);
        try (Jedis admin = node.admin()) {
            admin.clusterAddSlots(IntStream.range(0, 16384).toArray());
            RedisTestSupport.await("cluster_state:ok", Duration.ofSeconds(10),
                    () -> admin.clusterInfo().contains("cluster_state:ok"));
        } catch (RuntimeException | Error e) {
            node.close();
            throw e;
        }
        return node;
    }

    /** The version of the redis-server binary the tests run, read from a short-lived server. */
    private static String binaryVersion() {
        try (RedisServerProcess probe = RedisServerProcess.start()) {
            return probe.version();
        }
    }
}
