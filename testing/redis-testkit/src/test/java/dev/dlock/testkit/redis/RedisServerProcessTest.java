package dev.dlock.testkit.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.Test;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisConnectionException;

class RedisServerProcessTest {

    @Test
    void pathOrConfiguredBinaryAnswersPing() {
        try (RedisServerProcess server = RedisServerProcess.start(); Jedis admin = server.admin()) {
            assertThat(admin.ping()).isEqualTo("PONG");
            assertThat(server.uri()).isEqualTo("redis://127.0.0.1:" + server.port());
            assertThat(server.version()).matches("\\d+\\.\\d+\\.\\d+");
            assertThat(server.isRunning()).isTrue();
        }
    }

    @Test
    void embeddedBinaryAnswersPingWithRedis62() {
        try (RedisServerProcess server = RedisServerProcess.startEmbedded(); Jedis admin = server.admin()) {
            assertThat(admin.ping()).isEqualTo("PONG");
            assertThat(server.version()).startsWith("6.2.");
            assertThat(server.binary().getFileName().toString()).contains("redis-server-6.2");
        }
    }

    @Test
    void forcedEmbeddedPropertyPicksTheEmbeddedBinary() {
        String previous = System.getProperty(RedisBinaries.PROPERTY);
        System.setProperty(RedisBinaries.PROPERTY, "embedded");
        try {
            assertThat(RedisBinaries.resolve()).isEqualTo(RedisBinaries.embedded());
        } finally {
            restoreProperty(previous);
        }
    }

    @Test
    void startsEmbeddedSaysWhichBinaryStartWouldRun() {
        String previous = System.getProperty(RedisBinaries.PROPERTY);
        try {
            System.setProperty(RedisBinaries.PROPERTY, " embedded ");
            assertThat(RedisServerProcess.startsEmbedded()).isTrue();
            // Any executable configured by path is run as it is: this JVM's own java binary stands in for one.
            System.setProperty(RedisBinaries.PROPERTY, ProcessHandle.current().info().command().orElseThrow());
            assertThat(RedisServerProcess.startsEmbedded()).isFalse();
            System.clearProperty(RedisBinaries.PROPERTY);
            assertThat(RedisServerProcess.startsEmbedded()).isEqualTo(RedisBinaries.resolve().equals(RedisBinaries.embedded()));
        } finally {
            restoreProperty(previous);
        }
    }

    @Test
    void nonExecutableConfiguredBinaryFailsWithInstallAdvice() {
        String previous = System.getProperty(RedisBinaries.PROPERTY);
        System.setProperty(RedisBinaries.PROPERTY, "/nonexistent/redis-server");
        try {
            assertThatThrownBy(RedisBinaries::resolve)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("apt-get install redis-server")
                    .hasMessageContaining("brew install redis")
                    .hasMessageContaining("dlock.redis.server");
        } finally {
            restoreProperty(previous);
        }
    }

    @Test
    void everyPlatformEitherHasAnEmbeddedBinaryOrIsToldWhatToInstall() {
        assertThat(RedisBinaries.embeddedResourceName("Linux", "amd64")).isEqualTo("redis-server-6.2.6-v5-linux-amd64");
        assertThat(RedisBinaries.embeddedResourceName("Linux", "aarch64")).isEqualTo("redis-server-6.2.7-linux-arm64");
        assertThat(RedisBinaries.embeddedResourceName("Mac OS X", "aarch64")).isEqualTo("redis-server-6.2.6-v5-darwin-arm64");
        assertThat(RedisBinaries.embeddedResourceName("Mac OS X", "x86_64")).isEqualTo("redis-server-6.2.6-v5-darwin-amd64");
        assertThatThrownBy(() -> RedisBinaries.embeddedResourceName("Windows 11", "amd64"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("WSL 2")
                .hasMessageContaining("apt-get install redis-server");
        assertThatThrownBy(() -> RedisBinaries.embeddedResourceName("FreeBSD", "amd64"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Install Redis 6.2 or later")
                .hasMessageContaining("dlock.redis.server");
        // Every name the mapping gives is really inside the embedded-redis jar on the test class path.
        for (String[] platform : new String[][] {{"Linux", "amd64"}, {"Linux", "aarch64"}, {"Linux", "i386"},
                {"Mac OS X", "aarch64"}, {"Mac OS X", "x86_64"}}) {
            String resource = RedisBinaries.embeddedResourceName(platform[0], platform[1]);
            assertThat(getClass().getClassLoader().getResource(resource)).as(resource).isNotNull();
        }
    }

    @Test
    void killThenRestartServesAnEmptyDatasetOnTheSamePort() {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            int port = server.port();
            try (Jedis admin = server.admin()) {
                admin.set("survives", "no");
            }
            server.kill();
            assertThat(server.isRunning()).isFalse();
            assertThatThrownBy(() -> {
                try (Jedis admin = server.admin()) {
                    admin.ping();
                }
            }).isInstanceOf(JedisConnectionException.class);

            server.restart();

            assertThat(server.port()).isEqualTo(port);
            assertThat(server.isRunning()).isTrue();
            try (Jedis admin = server.admin()) {
                assertThat(admin.ping()).isEqualTo("PONG");
                assertThat(admin.exists("survives")).isFalse();
            }
        }
    }

    @Test
    void singleNodeClusterOwnsAllSlotsAlsoAfterRestart() {
        try (RedisServerProcess server = RedisServerProcess.startSingleNodeCluster()) {
            try (Jedis admin = server.admin()) {
                assertThat(admin.clusterInfo()).contains("cluster_state:ok", "cluster_slots_assigned:16384");
            }
            server.kill();
            server.restart();
            try (Jedis admin = server.admin()) {
                assertThat(admin.clusterInfo()).contains("cluster_state:ok");
            }
        }
    }

    @Test
    void aSuspendedServerRunsNoCommandUntilResumedAndThenRunsTheQueuedOnes() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start();
             Jedis stalled = new Jedis(server.host(), server.port(), 300);
             Jedis patient = new Jedis(server.host(), server.port(), 10_000)) {
            server.suspend();
            assertThat(server.isSuspended()).isTrue();
            assertThatThrownBy(stalled::ping).as("no reply while suspended").isInstanceOf(JedisConnectionException.class);
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<Long> queued = pool.submit(() -> patient.incr("queued"));
                assertThatThrownBy(() -> queued.get(300, TimeUnit.MILLISECONDS)).as("no reply while suspended")
                        .isInstanceOf(TimeoutException.class);
                server.resume();
                assertThat(server.isSuspended()).isFalse();
                assertThat(queued.get(10, TimeUnit.SECONDS)).as("the command that waited ran after the resume").isEqualTo(1);
            } finally {
                pool.shutdownNow();
            }
            try (Jedis admin = server.admin()) {
                assertThat(admin.ping()).isEqualTo("PONG");
            }
        }
    }

    @Test
    void aStallEndsWithItsBlockAlsoWhenTheBlockFails() {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            assertThatThrownBy(() -> {
                try (RedisServerProcess.Stall stall = server.stall()) {
                    assertThat(server.isSuspended()).isTrue();
                    throw new AssertionError("a test's assertion failed during the stall");
                }
            }).hasMessageContaining("during the stall");
            assertThat(server.isSuspended()).isFalse();
            try (Jedis admin = server.admin()) {
                assertThat(admin.ping()).as("the server answers right after the block").isEqualTo("PONG");
            }
            // A stall whose server was restarted meanwhile ends without signalling the new process.
            try (RedisServerProcess.Stall stall = server.stall()) {
                server.restart();
                assertThat(server.isSuspended()).as("a restarted server is not suspended").isFalse();
            }
            try (Jedis admin = server.admin()) {
                assertThat(admin.ping()).isEqualTo("PONG");
            }
        }
    }

    @Test
    void aSuspendedServerCanBeKilledAndStopped() {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            server.suspend();
            server.kill();
            assertThat(server.isRunning()).isFalse();
            assertThat(server.isSuspended()).isFalse();
            server.restart();
            server.suspend();
            long start = System.nanoTime();
            server.stop();
            assertThat(server.isRunning()).isFalse();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("stopped without waiting for the kill timeout")
                    .isLessThan(Duration.ofSeconds(5));
        }
    }

    @Test
    void gracefulStopEndsTheProcess() {
        try (RedisServerProcess server = RedisServerProcess.start()) {
            server.stop();
            assertThat(server.isRunning()).isFalse();
        }
    }

    @Test
    void commandCallsCountsEachCommand() {
        try (RedisServerProcess server = RedisServerProcess.start(); Jedis admin = server.admin()) {
            Map<String, Long> calls = server.commandCalls();
            long before = calls.getOrDefault("incr", 0L);
            long totalBefore = server.totalCommandCalls();
            admin.incr("counter");
            admin.incr("counter");
            admin.get("counter");
            assertThat(server.commandCalls().get("incr")).isEqualTo(before + 2);
            // Each commandCalls() opens one admin connection; only INFO runs on it, which is excluded.
            assertThat(server.totalCommandCalls()).isEqualTo(totalBefore + 3);
            assertThat(server.commandCallsSince(calls)).containsExactlyInAnyOrderEntriesOf(Map.of("incr", 2L, "get", 1L));
        }
    }

    @Test
    void closeDeletesTheTempDirectory() {
        RedisServerProcess server = RedisServerProcess.start();
        Path log = server.logFile();
        assertThat(Files.exists(log)).isTrue();
        server.close();
        assertThat(server.isRunning()).isFalse();
        assertThat(Files.exists(log.getParent())).isFalse();
    }

    private static void restoreProperty(String previous) {
        if (previous == null) {
            System.clearProperty(RedisBinaries.PROPERTY);
        } else {
            System.setProperty(RedisBinaries.PROPERTY, previous);
        }
    }
}
