package dev.dlock.boot.shutdown;

import dev.dlock.boot.BootLine;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.ChildJvm;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.UnifiedJedis;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A rolling deploy as it happens: a Boot web application in a second JVM holds keys in critical sections and gets
 * SIGTERM. Its lock manager's shutdown runs as a lifecycle phase after the web server drained and stopped and before
 * the Redis client is closed: a section ending after the signal releases its key itself, a section still running after
 * the grace period has its key freed and is told, and this JVM takes every key within the grace period plus a second —
 * not after the 30 s lease.
 */
class SigtermShutdownTest {

    private static final Duration GRACE = Duration.ofSeconds(2);

    private static RedisServerProcess redis;
    private static UnifiedJedis client;

    private final List<Process> children = new ArrayList<>();
    private final List<Path> files = new ArrayList<>();

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
        client = BootLine.redisClient(redis.host(), redis.port());
    }

    @AfterAll
    static void stopRedis() {
        if (client != null) {
            client.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @AfterEach
    void stopChildren() throws IOException {
        children.forEach(Process::destroyForcibly);
        for (Path file : files) {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void aSigtermFreesEveryKeyWithinTheGracePeriodAndASectionEndingMeanwhileReleasesItsOwn() throws Exception {
        String finishing = "finishing:" + UUID.randomUUID();
        String stuck = "stuck:" + UUID.randomUUID();
        Child child = start("--background=" + finishing + ":300," + stuck + ":-1");
        child.await("HELD " + finishing);
        child.await("HELD " + stuck);
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).instanceId("next-deploy").build()) {
            assertThat(locks.tryAcquire(stuck)).as("the stuck section's key before the signal").isEmpty();

            long signalled = System.nanoTime();
            child.process.destroy();
            Duration waited;
            try (LockHandle taken = locks.acquire(stuck, Duration.ofSeconds(40))) {
                waited = Duration.ofNanos(System.nanoTime() - signalled);
            } catch (LockNotAcquiredException e) {
                throw new AssertionError("the stuck section's key was not freed within 40 s of SIGTERM; the child's "
                        + "status and output:\n" + child.output(), e);
            }

            assertThat(waited).as("time from SIGTERM until this JVM took the key of a section still running (grace %s, "
                    + "lease 30 s); the child's status and output:\n%s", GRACE, child.output())
                    .isLessThan(GRACE.plusSeconds(1));
            child.await("RELEASED " + finishing);
            // The stuck section hears of its loss after the store freed the key: this JVM may have it first.
            child.await("LOST " + stuck + ": ");
            assertThat(child.status()).as("the child's status").doesNotContain("RELEASE-FAILED")
                    .contains("LOST " + stuck + ": ").contains("lock manager was closed");
            Optional<LockHandle> next = locks.tryAcquire(finishing);
            assertThat(next).as("the key of the section that ended after the signal").isPresent();
            next.get().close();
            assertThat(child.process.waitFor(30, TimeUnit.SECONDS)).as("the child exited").isTrue();
        }
    }

    /**
     * A request still running at SIGTERM is drained by Boot's graceful shutdown before the lock manager stops: its
     * section outlives the grace period, yet it releases its key itself, without a loss. Were the manager stopped before
     * the web server, the section would be reported lost after the grace period.
     */
    @Test
    void aRequestStillRunningAtSigtermIsDrainedBeforeTheLockManagerStops() throws Exception {
        String key = "request:" + UUID.randomUUID();
        Child child = start("--dlock.shutdown.grace-period=500ms");
        HttpClient http = HttpClient.newHttpClient();
        CompletableFuture<HttpResponse<String>> response = http.sendAsync(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + child.port() + "/section?key=" + key + "&endsAfterMillis=1500")).build(),
                HttpResponse.BodyHandlers.ofString());
        child.await("HELD " + key);

        child.process.destroy();

        HttpResponse<String> answer = response.get(60, TimeUnit.SECONDS);
        assertThat(answer.body()).as("the request's answer; the child's status and output:\n%s", child.output())
                .isEqualTo("RELEASED " + key);
        assertThat(child.status()).doesNotContain("LOST");
        assertThat(child.process.waitFor(30, TimeUnit.SECONDS)).as("the child exited").isTrue();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).build()) {
            Optional<LockHandle> next = locks.tryAcquire(key);
            assertThat(next).as("the request's key after the child exited").isPresent();
            next.get().close();
        }
    }

    /** Starts the application in a child JVM (this JVM's class path) on the test's Redis; returns once it serves. */
    private Child start(String... arguments) throws Exception {
        Path status = Files.createTempFile("dlock-sigterm-", ".status");
        Path output = Files.createTempFile("dlock-sigterm-", ".log");
        files.add(status);
        files.add(output);
        List<String> command = new ArrayList<>(ChildJvm.command(SigtermApplication.class,
                "--spring.config.name=dlock-sigterm-child", "--server.port=0", "--server.address=127.0.0.1",
                "--server.shutdown=graceful", "--dlock.redis.url=" + redis.uri(), "--status=" + status));
        command.addAll(List.of(arguments));
        if (command.stream().noneMatch(argument -> argument.startsWith("--dlock.shutdown.grace-period="))) {
            command.add("--dlock.shutdown.grace-period=" + GRACE.toMillis() + "ms");
        }
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        children.add(process);
        Child child = new Child(process, status, output);
        child.await("PORT ");
        return child;
    }

    /** A child JVM and the files it reports to. */
    private record Child(Process process, Path statusFile, Path outputFile) {

        /**
         * Waits up to 4 minutes for a status line starting with {@code prefix}: a Boot start took 90 s beside four
         * other builds on two cores.
         */
        void await(String prefix) throws Exception {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
            while (line(prefix).isEmpty()) {
                if (System.nanoTime() - deadline > 0 || !process.isAlive() && line(prefix).isEmpty()) {
                    throw new AssertionError("the child never reported '" + prefix + "'; its status and output:\n" + output());
                }
                Thread.sleep(10);
            }
        }

        int port() throws IOException {
            return Integer.parseInt(line("PORT ").orElseThrow().substring("PORT ".length()).trim());
        }

        private Optional<String> line(String prefix) throws IOException {
            String reported = status();
            // Only whole lines: a write may be seen half done.
            return reported.substring(0, reported.lastIndexOf('\n') + 1).lines().filter(l -> l.startsWith(prefix)).findFirst();
        }

        String status() throws IOException {
            return Files.readString(statusFile, StandardCharsets.UTF_8);
        }

        String output() {
            try {
                return status() + "\n--- output ---\n" + Files.readString(outputFile, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(unreadable: " + e + ")";
            }
        }
    }
}
