package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.Contender;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/** Redlock on five masters: quorum with two dead, a clean failure with three dead, fencing tokens across node restarts. */
class RedlockTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static final List<RedisServerProcess> masters = new ArrayList<>();
    private static final List<UnifiedJedis> clients = new ArrayList<>();

    @BeforeAll
    static void start() {
        for (int i = 0; i < 5; i++) {
            RedisServerProcess master = RedisServerProcess.start();
            masters.add(master);
            clients.add(RedisClient.builder().hostAndPort(master.host(), master.port())
                    .clientConfig(TopologyBackendFactory.clientConfig()).build());
        }
    }

    @AfterAll
    static void stop() {
        clients.forEach(UnifiedJedis::close);
        masters.forEach(RedisServerProcess::close);
    }

    @AfterEach
    void everyMasterRunsAgain() {
        for (RedisServerProcess master : masters) {
            if (!master.isRunning()) {
                master.restart();
            }
        }
    }

    @Test
    void theDriftIsOnePercentOfTheLeasePlusTwoMilliseconds() {
        assertThat(RedlockBackend.driftMillis(30_000)).isEqualTo(302);
        assertThat(RedlockBackend.driftMillis(100)).isEqualTo(3);
    }

    @Test
    void aQuorumIsAMajorityAndFewerThanThreeMastersAreRefused() {
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            assertThat(backend.quorum()).isEqualTo(3);
        }
        assertThatThrownBy(() -> RedlockBackend.builder(clients.subList(0, 2))).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void withTwoMastersDeadItStillLocksAndExcludes(@TempDir Path dir) throws Exception {
        masters.get(0).kill();
        masters.get(3).kill();
        try (RedlockBackend first = RedlockBackend.builder(clients).build();
             RedlockBackend second = RedlockBackend.builder(clients).build();
             LockManager a = LockManager.builder(first).build();
             LockManager b = LockManager.builder(second).build()) {
            Contender contender = new Contender(dir);
            ExecutorService pool = Executors.newFixedThreadPool(4);
            int overlaps = 0;
            try {
                List<Future<Integer>> done = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    LockManager locks = t % 2 == 0 ? a : b;
                    done.add(pool.submit(() -> contender.run(locks, "two-dead", 50)));
                }
                for (Future<Integer> f : done) {
                    overlaps += f.get(2, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(overlaps).isZero();
            assertThat(contender.counter()).isEqualTo(200);
            assertStrictlyIncreasing(Files.readAllLines(dir.resolve("tokens")).stream().map(Long::parseLong).toList());
        }
    }

    @Test
    void withThreeMastersDeadItFailsCleanly() {
        try (RedlockBackend backend = RedlockBackend.builder(clients).build();
             LockManager locks = LockManager.builder(backend).build()) {
            LockHandle held = locks.acquire("three-dead", Duration.ZERO);
            try {
                masters.get(1).kill();
                masters.get(2).kill();
                masters.get(4).kill();
                long start = System.nanoTime();
                assertThatThrownBy(() -> locks.acquire("three-dead-other", Duration.ofSeconds(30)))
                        .isInstanceOf(LockBackendException.class).hasMessageContaining("of 5 Redis masters answered (3 failed");
                assertThat(Duration.ofNanos(System.nanoTime() - start)).as("fails fast, not after the wait")
                        .isLessThan(Duration.ofSeconds(10));
                assertThatThrownBy(() -> backend.tryAcquire(LockKind.EXCLUSIVE, "three-dead", "intruder", 10_000))
                        .isInstanceOf(LockBackendException.class);
                assertThatThrownBy(backend::ping).isInstanceOf(LockBackendException.class);
                assertThat(locks.admin().heldLocks()).hasSize(1);
            } finally {
                RedisTestSupport.closeQuietly(held);
            }
        }
        for (int i : new int[] {0, 3}) {
            try (Jedis admin = masters.get(i).admin()) {
                // A master still answering when the attempt failed is released once its answer comes.
                RedisTestSupport.await("the failed attempt left nothing on master " + i, Duration.ofSeconds(10),
                        () -> !admin.exists(KEYS.lockKey("three-dead-other")));
            }
        }
    }

    @Test
    void aQuorumHeldByAnotherOwnerReportsItsRemainingLease() {
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "held", "first", 10_000)).isInstanceOf(AcquireResult.Acquired.class);
            AcquireResult second = backend.tryAcquire(LockKind.EXCLUSIVE, "held", "second", 10_000);
            assertThat(second).isInstanceOfSatisfying(AcquireResult.Held.class,
                    held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 10_000L));
            for (RedisServerProcess master : masters) {
                try (Jedis admin = master.admin()) {
                    // Still the winner's; marked where the loser's attempt reached it, so that the winner's release tells it.
                    assertThat(admin.get(KEYS.lockKey("held"))).as("the loser left the winner's keys alone").isIn("first", "first+waited");
                }
            }
        }
    }

    @Test
    void fencingTokensStrictlyIncreaseAcrossHoldersWhileMastersAreKilledAndRestarted() {
        List<Long> tokens = new ArrayList<>();
        try (RedlockBackend first = RedlockBackend.builder(clients).build();
             RedlockBackend second = RedlockBackend.builder(clients).build();
             LockManager a = LockManager.builder(first).build();
             LockManager b = LockManager.builder(second).build()) {
            for (int round = 0; round < 10; round++) {
                // Rotate which two masters are down; a restarted master comes back empty (no counter).
                RedisServerProcess down1 = masters.get(round % 5);
                RedisServerProcess down2 = masters.get((round + 2) % 5);
                down1.kill();
                down2.kill();
                for (int i = 0; i < 3; i++) {
                    LockManager locks = (round + i) % 2 == 0 ? a : b;
                    try (LockHandle lock = locks.acquire("fenced", Duration.ofSeconds(10))) {
                        tokens.add(lock.fencingToken());
                    }
                }
                down1.restart();
                down2.restart();
            }
        }
        assertThat(tokens).hasSize(30);
        assertStrictlyIncreasing(tokens);
    }

    private static void assertStrictlyIncreasing(List<Long> tokens) {
        for (int i = 1; i < tokens.size(); i++) {
            assertThat(tokens.get(i)).as("token %d of %d", i, tokens.size()).isGreaterThan(tokens.get(i - 1));
        }
    }
}
