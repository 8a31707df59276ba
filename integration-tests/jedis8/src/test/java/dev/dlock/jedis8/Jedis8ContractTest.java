package dev.dlock.jedis8;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.redis.JedisGeneration;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Redis store's contract suite on Jedis 8.0.2, with dlock-redis compiled against Jedis 7.4: Jedis 8
 * dropped JedisPooled and JedisSentineled and negotiates RESP3 by default, so the scripts' replies,
 * the pipelines and the release notices' pub/sub all run over RESP3 here.
 */
class Jedis8ContractTest extends StoreFailureContractTest {

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
    void runsOnJedis8() {
        assertThat(JedisGeneration.version()).startsWith("8.");
    }

    /** Without RESP3 this suite would only repeat the Jedis 7 run; the store's own connections say which protocol they speak. */
    @Test
    void theStoreSpeaksResp3() {
        LockBackend backend = factory().create(connection());
        try {
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "resp3", "owner-a", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
            try (Jedis admin = redis.admin()) {
                assertThat(admin.clientList()).contains("resp=3");
            }
        } finally {
            factory().dispose(backend);
        }
    }

    /** WAIT runs pipelined with the acquire script on one connection: the pipeline API whose Java type changed in Jedis 7. */
    @Test
    void waitForReplicasRunsPipelinedOnJedis8() {
        try (RedisServerProcess replica = RedisServerProcess.start(
                     List.of("--replicaof", redis.host(), Integer.toString(redis.port())));
             RedisClient client = RedisClient.builder().hostAndPort(new HostAndPort(redis.host(), redis.port()))
                     .clientConfig(DefaultJedisClientConfig.builder().socketTimeoutMillis(10_000).build()).build()) {
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
                LockSupport.parkNanos(20_000_000);
            }
        }
    }

    @Override
    protected BackendFactory factory() {
        return new Jedis8BackendFactory();
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
