package dev.dlock.testkit.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/** Each fault of the RESP proxy against a real redis-server. */
class RespProxyTest {

    private static final int CLIENT_TIMEOUT_MILLIS = 10_000;

    private static RedisServerProcess server;
    private RespProxy proxy;
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeAll
    static void startServer() {
        server = RedisServerProcess.start();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @BeforeEach
    void startProxy() {
        proxy = RespProxy.start(server);
        try (Jedis admin = server.admin()) {
            admin.flushAll();
        }
    }

    @AfterEach
    void closeProxy() {
        pool.shutdownNow();
        proxy.close();
    }

    private Jedis client() {
        return new Jedis(proxy.host(), proxy.port(), CLIENT_TIMEOUT_MILLIS);
    }

    private void pingNewClient() {
        try (Jedis client = client()) {
            client.ping();
        }
    }

    @Test
    void passesCommandsThroughAndCountsThem() {
        try (Jedis client = client()) {
            long before = proxy.commandCount();
            client.set("k", "v");
            assertThat(client.get("k")).isEqualTo("v");
            assertThat(proxy.commandCount() - before).isEqualTo(2);
        }
        assertThat(proxy.port()).isNotEqualTo(server.port());
    }

    @Test
    void failsMatchingCommandsWithTheGivenErrorAndKeepsPipelinedRepliesInOrder() {
        RespProxy.Rule refuseGet = proxy.failCommands(RespProxy.Command.named("get"), "ERR refused by the test");
        try (Jedis client = client()) {
            client.set("k", "v");
            assertThatThrownBy(() -> client.get("k")).isInstanceOf(JedisDataException.class)
                    .hasMessageContaining("refused by the test");
            try (Pipeline pipeline = client.pipelined()) {
                Response<Long> first = pipeline.incr("n");
                Response<String> refused = pipeline.get("k");
                Response<Long> second = pipeline.incr("n");
                pipeline.sync();
                assertThat(first.get()).isEqualTo(1);
                assertThatThrownBy(refused::get).isInstanceOf(JedisDataException.class);
                assertThat(second.get()).isEqualTo(2);
            }
            assertThat(refuseGet.matched()).isEqualTo(2);
            refuseGet.remove();
            assertThat(client.get("k")).isEqualTo("v");
        }
    }

    @Test
    void failsAScriptByItsSha1WhetherSentAsEvalshaOrEval() {
        String script = "return 'ran'";
        String other = "return 'other'";
        try (Jedis client = client()) {
            String sha1 = client.scriptLoad(script);
            proxy.failCommands(RespProxy.Command.runsScript(sha1), "ERR script refused");
            assertThatThrownBy(() -> client.evalsha(sha1)).isInstanceOf(JedisDataException.class).hasMessageContaining("script refused");
            assertThatThrownBy(() -> client.eval(script)).isInstanceOf(JedisDataException.class).hasMessageContaining("script refused");
            assertThat(client.eval(other)).isEqualTo("other");
        }
    }

    @Test
    void heldRepliesArriveOnlyWhenReleasedWhileTheServerAlreadyRanTheCommand() throws Exception {
        try (Jedis client = client(); Jedis direct = server.admin()) {
            proxy.holdReplies();
            Future<Long> reply = pool.submit(() -> client.incr("held"));
            awaitTrue(() -> "1".equals(direct.get("held")), "the server ran the command");
            assertThatThrownBy(() -> reply.get(200, TimeUnit.MILLISECONDS)).isInstanceOf(TimeoutException.class);
            proxy.releaseReplies();
            assertThat(reply.get(10, TimeUnit.SECONDS)).isEqualTo(1);
        }
    }

    @Test
    void delayedRepliesTakeAtLeastTheDelay() {
        try (Jedis client = client()) {
            client.ping();
            // A delay far above what a PING takes on a loaded machine, so that "no longer delayed" is certain.
            Duration delay = Duration.ofSeconds(1);
            proxy.delayReplies(delay);
            long start = System.nanoTime();
            assertThat(client.ping()).isEqualTo("PONG");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(delay);
            proxy.passThrough();
            start = System.nanoTime();
            client.ping();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(delay);
        }
    }

    @Test
    void delayedCommandsReachTheServerOnlyAfterTheDelay() throws Exception {
        try (Jedis client = client(); Jedis direct = server.admin()) {
            proxy.delayCommands(RespProxy.Command.named("set"), Duration.ofSeconds(1));
            long start = System.nanoTime();
            Future<String> reply = pool.submit(() -> client.set("late", "1"));
            assertThat(direct.exists("late")).as("not yet run").isFalse();
            assertThat(reply.get(10, TimeUnit.SECONDS)).isEqualTo("OK");
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
            assertThat(client.get("late")).as("other commands are not delayed").isEqualTo("1");
        }
    }

    @Test
    void aHeldCommandReachesTheServerWhenReleasedEvenAfterItsClientTimedOutAndLeft() throws Exception {
        try (Jedis direct = server.admin()) {
            RespProxy.Rule hold = proxy.holdCommand(RespProxy.Command.named("set"));
            try (Jedis client = new Jedis(proxy.host(), proxy.port(), 300)) {
                assertThatThrownBy(() -> client.set("late", "1")).as("the client times out")
                        .isInstanceOf(JedisConnectionException.class);
                assertThat(hold.awaitHeld(Duration.ofSeconds(10))).isTrue();
                assertThat(direct.exists("late")).as("held, not run").isFalse();
            }
            try (Jedis other = client()) {
                assertThat(other.set("other", "1")).as("only the first matching command is held").isEqualTo("OK");
            }
            hold.release();
            awaitTrue(() -> direct.exists("late"), "the held command ran after its client had gone");
            assertThat(hold.matched()).isEqualTo(1);
        }
    }

    @Test
    void cutConnectionsClosesEveryConnectionAndRefusesNewOnesUntilAcceptedAgain() {
        try (Jedis client = client()) {
            client.ping();
            proxy.cutConnections();
            assertThatThrownBy(client::ping).isInstanceOf(JedisConnectionException.class);
        }
        // A raw connect is not asserted: on a busy machine another process may be given the freed port.
        assertThatThrownBy(this::pingNewClient).as("a new client while cut").isInstanceOf(JedisConnectionException.class);
        proxy.acceptConnections();
        try (Jedis client = client()) {
            assertThat(client.ping()).isEqualTo("PONG");
        }
    }

    @Test
    void closeEndsEveryConnection() throws InterruptedException {
        try (Jedis client = client()) {
            client.ping();
            proxy.close();
            assertThatThrownBy(client::ping).isInstanceOf(JedisConnectionException.class);
            awaitTrue(() -> proxy.openConnections() == 0, "every connection is closed");
            proxy.acceptConnections();
            assertThatThrownBy(this::pingNewClient).as("a closed proxy stays closed").isInstanceOf(JedisConnectionException.class);
        }
    }

    private static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting until " + what);
            }
            Thread.sleep(10);
        }
    }
}
