package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.redis.CrossSlotRejectingProxy;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.args.ClientPauseMode;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * The scripts that queue on one lane go to Redis as one call of the batch script, each caller still getting its own
 * reply or error; plain SETs ride in the same pipeline as SETs. The server holds a first call back
 * ({@code CLIENT PAUSE WRITE}) while the others queue behind it, so what forms a batch is certain, and
 * {@code INFO commandstats} on the test's own server tells how the batch was sent.
 */
class CoalescedBatchScriptTest {

    private static final LuaScript PROBE = LuaScript.load("test_probe.lua", "test_prelude.lua");
    private static final long WAIT_SECONDS = 10;
    /** The fewest scripts that go as one batch script call. */
    private static final int MIN = ScriptCoalescer.MIN_BATCH_SCRIPT_CALLS;

    private static RedisServerProcess server;
    private static RedisClient client;

    private final ExecutorService callers = Executors.newCachedThreadPool();
    private final String prefix = "batch" + System.nanoTime() + ":";

    @BeforeAll
    static void start() {
        server = RedisServerProcess.start();
        client = RedisTestSupport.client(server.host(), server.port(), 5_000);
    }

    @AfterAll
    static void stop() throws Exception {
        RedisTestSupport.closeAll(client, server);
    }

    @AfterEach
    void stopCallers() {
        callers.shutdownNow();
    }

    @Test
    void queuedScriptsGoAsOneBatchScriptCallAndPlainSetsAsSets() throws Exception {
        ScriptCoalescer coalescer = new ScriptCoalescer(client, null, false, 1);
        warmUp(client);
        // A lane's first batch script goes in full (EVAL caches it)...
        assertThat(queueBehindAPausedCall(server, probe(coalescer, "first", "x"), probes(coalescer, "w", MIN)).commands())
                .containsEntry("eval", 1L).containsEntry("evalsha", 1L);
        try (Jedis admin = server.admin()) {
            admin.set(key("taken"), "someone");
        }
        List<Callable<Object>> queued = new ArrayList<>(probes(coalescer, "p", MIN - 1));
        queued.add(probe(coalescer, "nil", "nothing"));
        queued.add(() -> coalescer.setIfAbsent(0, key("free"), "me", 30_000));
        queued.add(() -> coalescer.setIfAbsent(0, key("taken"), "me", 30_000));

        Batch batch = queueBehindAPausedCall(server, probe(coalescer, "first2", "x"), queued);

        for (int i = 0; i < MIN - 1; i++) {
            assertThat(batch.answer(i)).isEqualTo(probed("p", i));
        }
        assertThat(batch.answer(MIN - 1)).as("a script's nil").isNull();
        assertThat(batch.answer(MIN)).isEqualTo("OK");
        assertThat(batch.answer(MIN + 1)).as("SET NX of a taken key").isNull();
        try (Jedis admin = server.admin()) {
            assertThat(admin.get(key("free"))).isEqualTo("me");
            assertThat(admin.pttl(key("free"))).isBetween(1L, 30_000L);
            assertThat(admin.get(key("taken"))).isEqualTo("someone");
        }
        // ...and later ones by SHA-1: the paused first call and one batch script for the scripts; the SETs as SETs.
        assertThat(batch.commands()).containsEntry("evalsha", 2L).doesNotContainKey("eval")
                .containsEntry("rpush", (long) MIN).containsEntry("set", 2L);

        // Fewer scripts than pay for a batch script go as EVALSHAs of their own.
        assertThat(queueBehindAPausedCall(server, probe(coalescer, "first3", "x"), probes(coalescer, "q", MIN - 1)).commands())
                .containsEntry("evalsha", (long) MIN).doesNotContainKey("eval");
    }

    @Test
    void theStoresOwnScriptsGoAsOneBatchScriptCall() throws Exception {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).coalescingLanes(1, 1).build()) {
            // Every script loaded, and the lane's batch script too, so that the calls below are EVALSHAs.
            warmUp(client);
            backend.release(LockKind.EXCLUSIVE, key("warm"), "nobody", 0);
            backend.release(LockKind.READ, key("warm"), "nobody", 0);
            queueBehindAPausedCall(server, () -> backend.tryAcquire(LockKind.READ, key("warm0"), "o", 30_000),
                    readers(backend, "warm", MIN)).commands();
            List<Callable<Object>> readers = readers(backend, "r", MIN);

            Batch reads = queueBehindAPausedCall(server, () -> backend.tryAcquire(LockKind.READ, key("first"), "o", 30_000), readers);

            List<Long> tokens = new ArrayList<>();
            for (int i = 0; i < MIN; i++) {
                assertThat(reads.answer(i)).as("reader " + i).isInstanceOf(AcquireResult.Acquired.class);
                tokens.add(((AcquireResult.Acquired) reads.answer(i)).fencingToken());
            }
            assertThat(tokens).doesNotHaveDuplicates().allMatch(token -> token > 0);
            assertThat(reads.commands()).as("the paused first call and one batch script").containsEntry("evalsha", 2L)
                    .doesNotContainKey("eval");

            // Two scripts in one batch script call: shared releases of the reads, and releases of exclusive locks.
            List<Callable<Object>> releases = new ArrayList<>();
            for (int i = 0; i < MIN; i++) {
                String key = key("x" + i);
                assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "owner" + i, 30_000)).isInstanceOf(AcquireResult.Acquired.class);
                long token = tokens.get(i);
                String readKey = key("r" + i);
                String owner = "owner" + i;
                releases.add(() -> backend.release(LockKind.READ, readKey, owner, token));
                releases.add(() -> backend.release(LockKind.EXCLUSIVE, key, owner, 0));
            }
            Batch released = queueBehindAPausedCall(server, () -> backend.release(LockKind.READ, key("first"), "o", 0), releases);
            for (int i = 0; i < releases.size(); i++) {
                assertThat(released.answer(i)).as("release " + i).isEqualTo(ReleaseResult.RELEASED);
            }
            assertThat(released.commands()).containsEntry("evalsha", 2L).doesNotContainKey("eval");
        }
    }

    @Test
    void aFailingScriptFailsOnlyItsOwnCaller() throws Exception {
        ScriptCoalescer coalescer = new ScriptCoalescer(client, null, false, 1);
        warmUp(client);
        try (Jedis admin = server.admin()) {
            admin.set(key("string"), "not a list");
        }

        List<Callable<Object>> queued = new ArrayList<>(List.of(
                probe(coalescer, "ok1", "a"), probe(coalescer, "string", "b"), probe(coalescer, "refused", "refuse"),
                probe(coalescer, "raised", "raise"), probe(coalescer, "ok2", "c")));
        // Enough of them to go as one batch script.
        queued.addAll(probes(coalescer, "more", Math.max(0, MIN - queued.size())));

        Batch batch = queueBehindAPausedCall(server, probe(coalescer, "first", "x"), queued);

        assertThat(batch.answer(0)).isEqualTo(List.of(key("ok1"), "tagged:a", 1L));
        assertThat(batch.failure(1)).isInstanceOf(JedisDataException.class).hasMessageStartingWith("WRONGTYPE");
        assertThat(batch.failure(2)).isInstanceOf(JedisDataException.class).hasMessage("DLOCKTEST refused on purpose");
        assertThat(batch.failure(3)).isInstanceOf(JedisDataException.class).hasMessageStartingWith("ERR ")
                .hasMessageContaining("raised on purpose");
        assertThat(batch.answer(4)).isEqualTo(List.of(key("ok2"), "tagged:c", 1L));
        Map<String, Long> commands = batch.commands();
        assertThat(commands.getOrDefault("evalsha", 0L) + commands.getOrDefault("eval", 0L))
                .as("the paused first call and one batch script").isEqualTo(2);
    }

    @Test
    void aBatchScriptTheServerLostIsRunByEachCallerAloneAndThenSentInFullAgain() throws Exception {
        ScriptCoalescer coalescer = new ScriptCoalescer(client, null, false, 1);
        warmUp(client);
        queueBehindAPausedCall(server, probe(coalescer, "first", "x"), probes(coalescer, "w", MIN)).commands();
        try (Jedis admin = server.admin()) {
            admin.scriptFlush();
        }

        Batch lost = queueBehindAPausedCall(server, probe(coalescer, "first2", "x"), probes(coalescer, "n", MIN));
        for (int i = 0; i < MIN; i++) {
            // Each ran once: the batch script's NOSCRIPT ran none of them.
            assertThat(lost.answer(i)).isEqualTo(probed("n", i));
        }

        Batch again = queueBehindAPausedCall(server, probe(coalescer, "first3", "x"), probes(coalescer, "m", MIN));
        for (int i = 0; i < MIN; i++) {
            assertThat(again.answer(i)).isEqualTo(probed("m", i));
        }
        assertThat(again.commands()).as("the batch script sent in full, once").containsEntry("eval", 1L).containsEntry("evalsha", 1L);
    }

    @Test
    void anInterruptedQueuedCallerKeepsItsAnswerAndItsInterrupt() throws Exception {
        ScriptCoalescer coalescer = new ScriptCoalescer(client, null, false, 1);
        warmUp(client);
        List<Callable<Object>> queued = new ArrayList<>(probes(coalescer, "j", MIN));
        queued.set(1, () -> List.of(coalescer.run(PROBE, 0, List.of(key("i")), List.of("i")), Thread.currentThread().isInterrupted()));

        Batch batch = queueBehindAPausedCall(server, probe(coalescer, "first", "x"), queued, threads -> threads.get(1).interrupt());

        assertThat(batch.answer(1)).isEqualTo(List.of(List.of(key("i"), "tagged:i", 1L), true));
        assertThat(batch.answer(0)).isEqualTo(probed("j", 0));
    }

    @Test
    void aConnectionCutMidBatchFailsEveryCallerOfTheBatch() throws Exception {
        try (RespProxy proxy = RespProxy.start(server);
             RedisClient proxied = RedisTestSupport.client(proxy.host(), proxy.port(), 5_000)) {
            ScriptCoalescer coalescer = new ScriptCoalescer(proxied, null, false, 1);
            warmUp(proxied);
            // The batch leaves the client but the proxy holds it back: it is in flight when the connection is cut.
            RespProxy.Rule inFlight = proxy.delayCommands(RespProxy.Command.runsScript(LuaScript.batch().sha1()), Duration.ofSeconds(60));
            List<Callable<Object>> queued = new ArrayList<>(probes(coalescer, "c", MIN));
            queued.add(() -> coalescer.setIfAbsent(0, key("set"), "me", 30_000));

            Batch batch = queueBehindAPausedCall(server, probe(coalescer, "first", "x"), queued);
            RedisTestSupport.await("the batch script at the proxy", Duration.ofSeconds(WAIT_SECONDS), () -> inFlight.matched() > 0);
            proxy.cutConnections();

            assertThat(batch.first.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(List.of(key("first"), "tagged:x", 1L));
            for (int i = 0; i < queued.size(); i++) {
                // The SET ran ahead of the batch script in the pipeline: failing it is "may or may not have run".
                assertThat(batch.failure(i)).as("caller " + i).isInstanceOf(JedisException.class);
            }
            try (Jedis admin = server.admin()) {
                for (int i = 0; i < MIN; i++) {
                    assertThat(admin.exists(key("c" + i))).as("list of the held-back batch script").isFalse();
                }
            }
        }
    }

    @Test
    void aProxyRefusingABatchAcrossSlotsMakesEachCallerRunAloneAndLaterBatchesGoBySlot() throws Exception {
        try (CrossSlotRejectingProxy proxy = CrossSlotRejectingProxy.start(server);
             RedisClient proxied = RedisTestSupport.client(proxy.host(), proxy.port(), 5_000)) {
            // A standalone store behind a cluster proxy: it does not know the slots matter.
            ScriptCoalescer coalescer = new ScriptCoalescer(proxied, null, false, 1);
            warmUp(proxied);

            Batch refused = queueBehindAPausedCall(server, probe(coalescer, "first", "x"), probes(coalescer, "s", MIN));
            for (int i = 0; i < MIN; i++) {
                assertThat(refused.answer(i)).isEqualTo(probed("s", i));
            }
            assertThat(proxy.refusedScripts()).as("the batch script, refused once").isEqualTo(1);

            Batch bySlot = queueBehindAPausedCall(server, probe(coalescer, "first2", "x"), probes(coalescer, "t", MIN));
            for (int i = 0; i < MIN; i++) {
                assertThat(bySlot.answer(i)).isEqualTo(probed("t", i));
            }
            assertThat(proxy.refusedScripts()).as("nothing refused once batches go by slot").isEqualTo(1);
        }
    }

    @Test
    void onAClusterScriptsOfTwoSlotsOnOneNodeGoAsSeparateCalls() throws Exception {
        try (RedisServerProcess node = RedisServerProcess.startSingleNodeCluster();
             RedisClusterClient cluster = RedisClusterClient.builder().nodes(Set.of(new HostAndPort(node.host(), node.port())))
                     .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(5_000).build()).build()) {
            ScriptCoalescer coalescer = new ScriptCoalescer(cluster, ClusterNodes.of(cluster), true, 1);
            warmUp(cluster);
            assertThat(JedisClusterCRC16.getSlot(key("{a}"))).isNotEqualTo(JedisClusterCRC16.getSlot(key("{b}")));
            List<Callable<Object>> queued = new ArrayList<>(probes(coalescer, "{a}", MIN));
            queued.add(probe(coalescer, "{b}0", "{b}0"));

            Batch batch = queueBehindAPausedCall(node, probe(coalescer, "{a}first", "x"), queued);

            for (int i = 0; i < MIN; i++) {
                assertThat(batch.answer(i)).isEqualTo(probed("{a}", i));
            }
            assertThat(batch.answer(MIN)).isEqualTo(probed("{b}", 0));
            // The paused first call; slot a's scripts in one batch script (in full: the lane's first); slot b's alone.
            assertThat(batch.commands()).containsEntry("evalsha", 2L).containsEntry("eval", 1L).containsEntry("rpush", MIN + 2L);
        }
    }

    private String key(String name) {
        return name.startsWith("{") ? name.substring(0, name.indexOf('}') + 1) + prefix + name.substring(name.indexOf('}') + 1)
                : prefix + name;
    }

    /** {@code count} read acquisitions through {@code backend}, on the keys {@code name0}, {@code name1}, ... by owners owner0, owner1, ... */
    private List<Callable<Object>> readers(RedisLockBackend backend, String name, int count) {
        List<Callable<Object>> readers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String key = key(name + i);
            String owner = "owner" + i;
            readers.add(() -> backend.tryAcquire(LockKind.READ, key, owner, 30_000));
        }
        return readers;
    }

    /** {@code count} probes on the keys {@code name0}, {@code name1}, ..., each with its key's name as its value. */
    private List<Callable<Object>> probes(ScriptCoalescer coalescer, String name, int count) {
        List<Callable<Object>> probes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            probes.add(probe(coalescer, name + i, name + i));
        }
        return probes;
    }

    /** What probe {@code i} of {@link #probes} answers when it ran once. */
    private List<Object> probed(String name, int i) {
        return List.of(key(name + i), "tagged:" + name + i, 1L);
    }

    /** The probe script on {@code name}'s key with {@code value}, through the coalescer. */
    private Callable<Object> probe(ScriptCoalescer coalescer, String name, String value) {
        String key = key(name);
        return () -> coalescer.run(PROBE, JedisClusterCRC16.getSlot(key), List.of(key), List.of(value));
    }

    /** Caches the probe on the server, so that a first call is one EVALSHA. */
    private void warmUp(UnifiedJedis jedis) {
        PROBE.run(jedis, List.of(key("{a}warm")), List.of("warm"));
    }

    private Batch queueBehindAPausedCall(RedisServerProcess redis, Callable<Object> first, List<Callable<Object>> queued)
            throws Exception {
        return queueBehindAPausedCall(redis, first, queued, threads -> { });
    }

    /**
     * Sends {@code first} while {@code redis} holds scripts back, so that it takes the coalescer's only lane and
     * waits there; then each of {@code queued} from a thread of its own, in order. Once every one of them waits
     * in the queue, {@code whileQueued} runs with their threads (in the same order) and the pause ends: the first call is answered,
     * and its caller wakes the queued ones, which go out as one batch.
     */
    private Batch queueBehindAPausedCall(RedisServerProcess redis, Callable<Object> first, List<Callable<Object>> queued,
                                         Consumer<List<Thread>> whileQueued) throws Exception {
        Map<String, Long> before = redis.commandCalls();
        List<Future<Object>> answers = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        Future<Object> firstAnswer;
        try (Jedis admin = redis.admin()) {
            admin.clientPause(60_000, ClientPauseMode.WRITE);
            try {
                firstAnswer = callers.submit(first);
                RedisTestSupport.await("the first call held by the server", Duration.ofSeconds(WAIT_SECONDS),
                        () -> admin.info("clients").contains("blocked_clients:1"));
                for (Callable<Object> call : queued) {
                    // One at a time, so the queue holds them in order.
                    CompletableFuture<Thread> caller = new CompletableFuture<>();
                    answers.add(callers.submit(() -> {
                        caller.complete(Thread.currentThread());
                        return call.call();
                    }));
                    Thread thread = caller.get(WAIT_SECONDS, TimeUnit.SECONDS);
                    threads.add(thread);
                    RedisTestSupport.await("caller " + threads.size() + " queued", Duration.ofSeconds(WAIT_SECONDS),
                            () -> thread.getState() == Thread.State.WAITING);
                }
                whileQueued.accept(threads);
            } finally {
                admin.clientUnpause();
            }
        }
        return new Batch(redis, before, firstAnswer, answers);
    }

    /** The queued calls of one batch: their answers, and the commands the server ran from just before the first call. */
    private record Batch(RedisServerProcess redis, Map<String, Long> before, Future<Object> first, List<Future<Object>> queued) {

        Object answer(int i) throws Exception {
            return queued.get(i).get(WAIT_SECONDS, TimeUnit.SECONDS);
        }

        Throwable failure(int i) {
            Throwable thrown = catchThrowable(() -> answer(i));
            assertThat(thrown).as("queued call " + i).isInstanceOf(ExecutionException.class);
            return thrown.getCause();
        }

        /** Once every call is answered or failed. */
        Map<String, Long> commands() throws Exception {
            for (Future<Object> answer : queued) {
                try {
                    answer.get(WAIT_SECONDS, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    // A failed call ran what it ran.
                }
            }
            first.get(WAIT_SECONDS, TimeUnit.SECONDS);
            return redis.commandCallsSince(before);
        }
    }
}
