package dev.dlock.redis;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.testkit.ChildJvm;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code fair = true} across processes: three JVMs queue for a key one after another while a holder that then
 * dies has it, and take it in the order they asked, which their fencing tokens record.
 */
class FairAcrossJvmsTest {

    private static RedisServerProcess redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void threeJvmsTakeAFairLockInTheOrderTheyAskedForIt(@TempDir Path dir) throws Exception {
        String key = "fair-jvms:" + UUID.randomUUID();
        String queue = RedisLockBackend.DEFAULT_KEY_PREFIX + "{" + key + "}:queue";
        List<Process> children = new ArrayList<>();
        try (RedisClient client = RedisClient.create(redis.host(), redis.port());
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).build();
             Jedis admin = redis.admin()) {
            // A holder that dies: its lease runs out with no release notice, so every waiter asks again at the same
            // moment (when the lease ends) and only the store's queue decides who is next. The lease is ended by hand
            // once all three JVMs queued: a JVM slow to start under load must not find the key free.
            locks.acquire(LockRequest.builder(key).kind(LockKind.FAIR).leaseTime(Duration.ofSeconds(120)).waitTime(Duration.ZERO).build());
            for (int jvm = 0; jvm < 3; jvm++) {
                children.add(new ProcessBuilder(ChildJvm.command(FairWaiter.class, redis.uri(), key,
                        dir.resolve("jvm-" + jvm).toString())).redirectErrorStream(true).redirectOutput(dir.resolve("jvm-" + jvm + ".log").toFile()).start());
                // The next JVM starts only once this one has its place in the queue.
                long queued = jvm + 1;
                awaitTrue(Duration.ofSeconds(60), () -> admin.zcard(queue) >= queued);
            }
            assertThat(admin.pexpire(new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX).lockKey(key), 1)).as("the holder's lease ended").isEqualTo(1);
            for (Process child : children) {
                assertThat(child.waitFor(60, TimeUnit.SECONDS)).as("child finished").isTrue();
                assertThat(child.exitValue()).as("child exit").isZero();
            }
        } finally {
            children.forEach(Process::destroyForcibly);
        }
        List<String> byToken = new ArrayList<>(List.of("jvm-0", "jvm-1", "jvm-2"));
        byToken.sort(Comparator.comparingLong(name -> token(dir.resolve(name))));
        assertThat(byToken).as("the JVMs in the order they held the key").containsExactly("jvm-0", "jvm-1", "jvm-2");
    }

    private static long token(Path file) {
        try {
            return Long.parseLong(Files.readString(file).trim());
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void awaitTrue(Duration timeout, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("condition within %s", timeout).isLessThan(end);
            TimeUnit.MILLISECONDS.sleep(10);
        }
    }

    /** The child: waits for the fair lock, writes its fencing token, holds briefly, releases. */
    public static final class FairWaiter {
        public static void main(String[] args) throws Exception {
            java.net.URI uri = java.net.URI.create(args[0]);
            try (RedisClient client = RedisClient.create(uri.getHost(), uri.getPort());
                 RedisLockBackend backend = RedisLockBackend.builder(client).build();
                 LockManager locks = LockManager.builder(backend).build();
                 LockHandle lock = locks.acquire(LockRequest.builder(args[1]).kind(LockKind.FAIR).waitTime(Duration.ofSeconds(60)).build())) {
                Files.writeString(Path.of(args[2]), Long.toString(lock.fencingToken()));
                TimeUnit.MILLISECONDS.sleep(50);
            }
            System.exit(0);
        }
    }
}
