package dev.dlock.boottests;

import dev.dlock.core.LockKind;
import dev.dlock.redis.JedisGeneration;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.RenewalResult;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisPooled;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Redis store's contract suite on the Jedis that Spring Boot 3.5 manages (6.0.0), whose clients
 * (JedisPooled) and pipelines differ from Jedis 7's: renewals, release notices, crash and restart.
 */
class Jedis6ContractTest extends StoreFailureContractTest {

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
    void runsOnJedis6() {
        assertThat(JedisGeneration.version()).startsWith("6.");
    }

    /** WAIT runs pipelined with the acquire script on one connection: the pipeline API whose Java type changed in Jedis 7. */
    @Test
    void waitForReplicasRunsPipelinedOnJedis6() {
        try (RedisServerProcess replica = RedisServerProcess.start(
                     List.of("--replicaof", redis.host(), Integer.toString(redis.port())));
             JedisPooled client = new JedisPooled(new HostAndPort(redis.host(), redis.port()),
                     DefaultJedisClientConfig.builder().socketTimeoutMillis(10_000).build())) {
            awaitReplicaLinked(replica);
            RedisLockBackend backend = RedisLockBackend.builder(client)
                    .waitForReplicas(1, Duration.ofSeconds(5))
                    .cluster(true)
                    .build();
            try (backend) {
                assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "replicated-a", "owner-a", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
                assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "replicated-b", "owner-b", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
                // Two keys in different slots of a store built with cluster(true): renewed through one pipeline.
                assertThat(backend.renew(List.of(new LeaseRenewal("replicated-a", "owner-a", 30_000),
                        new LeaseRenewal("replicated-b", "owner-b", 30_000)))).containsOnly(RenewalResult.RENEWED);
            }
        }
    }

    private static void awaitReplicaLinked(RedisServerProcess replica) {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        try (Jedis admin = replica.admin()) {
            while (!admin.info("replication").contains("master_link_status:up")) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("the replica did not link to its master within 10 s");
                }
                java.util.concurrent.locks.LockSupport.parkNanos(20_000_000);
            }
        }
    }

    @Override
    protected BackendFactory factory() {
        return new Jedis6BackendFactory();
    }

    @Override
    protected String connection() {
        return redis.uri();
    }

    @Override
    protected void deleteKey(String key) {
        try (Jedis admin = redis.admin()) {
            assertThat(admin.del(RedisLockBackend.DEFAULT_KEY_PREFIX + "{" + key + "}")).as("deleted the lock key").isEqualTo(1);
        }
    }

    @Override
    protected void wipeStore() {
        try (Jedis admin = redis.admin()) {
            admin.flushAll();
        }
    }

    @Override
    protected void crashStore() {
        redis.kill();
    }

    @Override
    protected void restartStore() {
        redis.restart();
    }

    @Override
    protected long storeCommandCount() {
        return redis.totalCommandCalls();
    }
}
