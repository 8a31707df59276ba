package dev.dlock.aspect.it;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.aspect.EnableDistributedLocks;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.testkit.redis.RedisClusterSetup;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.util.JedisClusterCRC16;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Two-key annotation locks whose keys live on different masters of a real 3-master Redis Cluster. */
class ClusterMultiKeyTest {

    private static RedisClusterSetup cluster;
    private static RedisClusterClient client;
    private static AnnotationConfigApplicationContext context;
    private static LockManager otherJvm;

    /** Transfers between two accounts, locking both. */
    public static class Transfers {
        private final OverlapDetector detector = new OverlapDetector();

        /** The detector (through a method: the bean is a proxy, its own fields are not the target's). */
        public OverlapDetector detector() {
            return detector;
        }

        /** Locks both accounts, in sorted order whatever the argument order. */
        @DistributedLock(name = "account", keys = {"#from", "#to"}, waitTime = "30s")
        public void transfer(String from, String to) {
            detector.enter();
            detector.incrementUnsafely();
            detector.exit();
        }

        /** The same with no waiting, for the rollback case. */
        @DistributedLock(name = "account", keys = {"#from", "#to"}, waitTime = "0")
        public void transferNow(String from, String to) {
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableDistributedLocks
    static class Config {
        @Bean(destroyMethod = "close")
        LockManager lockManager() {
            return LockManager.builder(RedisLockBackend.builder(client).build()).build();
        }

        @Bean
        Transfers transfers() {
            return new Transfers();
        }
    }

    @BeforeAll
    static void start() {
        cluster = RedisClusterSetup.start(3, 0);
        client = RedisClusterClient.builder().nodes(cluster.seeds()).build();
        context = new AnnotationConfigApplicationContext(Config.class);
        otherJvm = LockManager.builder(RedisLockBackend.builder(client).build()).watchdogThreadName("other-jvm-watchdog").build();
    }

    @AfterAll
    static void stop() {
        otherJvm.close();
        context.close();
        client.close();
        cluster.close();
    }

    /** Two account ids whose lock keys hash to slots served by different masters. */
    private static List<String> accountsOnDifferentMasters() {
        String first = "acct-0";
        for (int i = 1; i < 1000; i++) {
            String second = "acct-" + i;
            if (!cluster.masterOf(lockKey(first)).equals(cluster.masterOf(lockKey(second)))) {
                return List.of(first, second);
            }
        }
        throw new IllegalStateException("no two accounts on different masters");
    }

    private static String lockKey(String account) {
        return RedisLockBackend.DEFAULT_KEY_PREFIX + "{account:" + account + "}";
    }

    @Test
    void oppositeOrdersAcrossMastersNeitherDeadlockNorOverlap() throws Exception {
        List<String> accounts = accountsOnDifferentMasters();
        assertThat(JedisClusterCRC16.getSlot(lockKey(accounts.get(0)))).isNotEqualTo(JedisClusterCRC16.getSlot(lockKey(accounts.get(1))));
        Transfers transfers = context.getBean(Transfers.class);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<?> forward = pool.submit(() -> {
                for (int i = 0; i < 100; i++) {
                    transfers.transfer(accounts.get(0), accounts.get(1));
                }
            });
            Future<?> backward = pool.submit(() -> {
                for (int i = 0; i < 100; i++) {
                    transfers.transfer(accounts.get(1), accounts.get(0));
                }
            });
            forward.get(60, TimeUnit.SECONDS);
            backward.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        assertThat(transfers.detector().overlaps()).isZero();
        assertThat(transfers.detector().counter()).isEqualTo(200);
    }

    @Test
    void whenTheSecondKeyIsHeldTheFirstIsReleasedAgain() {
        List<String> accounts = accountsOnDifferentMasters().stream().sorted().toList();
        Transfers transfers = context.getBean(Transfers.class);
        try (LockHandle second = otherJvm.acquire("account:" + accounts.get(1), Duration.ZERO)) {
            assertThatThrownBy(() -> transfers.transferNow(accounts.get(0), accounts.get(1)))
                    .isInstanceOf(LockNotAcquiredException.class);
            Optional<LockHandle> first = otherJvm.tryAcquire("account:" + accounts.get(0));
            assertThat(first).as("the first key, taken before the second failed, was rolled back").isPresent();
            first.get().close();
            assertThat(second.isHeld()).isTrue();
        }
    }
}
