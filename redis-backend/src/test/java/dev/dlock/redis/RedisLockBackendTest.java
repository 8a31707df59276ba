package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoreNode;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

class RedisLockBackendTest {

    private static RedisServerProcess server;
    private static RedisClient client;

    private final RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private RedisLockBackend backend;

    @BeforeAll
    static void startRedis() {
        server = RedisServerProcess.start();
        client = RedisTestSupport.client(server);
    }

    @AfterAll
    static void stopRedis() {
        if (client != null) {
            client.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @BeforeEach
    void newBackend() {
        try (Jedis admin = server.admin()) {
            admin.flushAll();
        }
        backend = RedisLockBackend.builder(client).build();
    }

    @AfterEach
    void closeBackend() {
        backend.close();
    }

    @Test
    void acquireTakesAFreeKeyAndReportsTheRemainingTtlWhenHeld() {
        AcquireResult first = backend.tryAcquire(LockKind.EXCLUSIVE, "order-1", "owner-a", 30_000);
        AcquireResult second = backend.tryAcquire(LockKind.EXCLUSIVE, "order-1", "owner-b", 30_000);

        assertThat(first).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(second).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 30_000L));
        try (Jedis admin = server.admin()) {
            // Still owner-a's; the refused attempt marked it, so that owner-a's release will tell waiters.
            assertThat(admin.get(keys.lockKey("order-1"))).isEqualTo("owner-a+waited");
            assertThat(admin.pttl(keys.lockKey("order-1"))).isBetween(1L, 30_000L);
        }
    }

    @Test
    void fencingTokensStrictlyIncrease() {
        long previous = Long.MIN_VALUE;
        for (int i = 0; i < 20; i++) {
            long token = acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "order-2", "owner-" + i, 10_000));
            assertThat(token).isGreaterThan(previous);
            previous = token;
            assertThat(backend.release(LockKind.EXCLUSIVE, "order-2", "owner-" + i, 0)).isEqualTo(ReleaseResult.RELEASED);
        }
    }

    @Test
    void fencingTokensStillIncreaseAfterTheCounterIsDeleted() {
        long before = acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "order-3", "a", 10_000));
        backend.release(LockKind.EXCLUSIVE, "order-3", "a", 0);
        try (Jedis admin = server.admin()) {
            admin.del(keys.counterKey("order-3"));
        }
        long after = acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "order-3", "b", 10_000));
        assertThat(after).isGreaterThan(before);
    }

    @Test
    void fencingTokensStillIncreaseAfterTheCounterExpires() {
        RedisLockBackend shortCounter = RedisLockBackend.builder(client)
                .fencingCounterTtl(Duration.ofMillis(100)).build();
        try (shortCounter; Jedis admin = server.admin()) {
            long previous = 0;
            for (int round = 0; round < 3; round++) {
                long first = acquiredToken(shortCounter.tryAcquire(LockKind.EXCLUSIVE, "order-4", "a", 10_000));
                shortCounter.release(LockKind.EXCLUSIVE, "order-4", "a", 0);
                long second = acquiredToken(shortCounter.tryAcquire(LockKind.EXCLUSIVE, "order-4", "b", 10_000));
                shortCounter.release(LockKind.EXCLUSIVE, "order-4", "b", 0);
                assertThat(first).isGreaterThan(previous);
                assertThat(second).isGreaterThan(first);
                previous = second;
                await("fencing counter to expire", Duration.ofSeconds(5),
                        () -> !admin.exists(keys.counterKey("order-4")));
            }
        }
    }

    @Test
    void fencingCounterHasTheConfiguredExpiry() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "order-5", "a", 10_000);
        try (Jedis admin = server.admin()) {
            assertThat(admin.pttl(keys.counterKey("order-5")))
                    .isBetween(Duration.ofHours(23).toMillis(), Duration.ofHours(24).toMillis());
        }
    }

    @Test
    void releaseByTheOwnerDeletesTheKey() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "order-6", "a", 10_000);
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-6", "a", 0)).isEqualTo(ReleaseResult.RELEASED);
        try (Jedis admin = server.admin()) {
            assertThat(admin.exists(keys.lockKey("order-6"))).isFalse();
        }
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-6", "a", 0)).isEqualTo(ReleaseResult.NOT_OWNER);
    }

    @Test
    void releaseByAnotherOwnerDeletesNothing() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "order-7", "a", 10_000);
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-7", "b", 0)).isEqualTo(ReleaseResult.NOT_OWNER);
        try (Jedis admin = server.admin()) {
            assertThat(admin.get(keys.lockKey("order-7"))).isEqualTo("a");
        }
    }

    @Test
    void renewBatchReportsRenewedExpiredAndTakenAndExtendsOnlyTheOwnedLease() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "mine", "me", 1_000);
        backend.tryAcquire(LockKind.EXCLUSIVE, "theirs", "them", 1_000);

        List<RenewalResult> results = backend.renew(List.of(
                new LeaseRenewal("mine", "me", 60_000),
                new LeaseRenewal("gone", "me", 60_000),
                new LeaseRenewal("theirs", "me", 60_000)));

        assertThat(results).containsExactly(RenewalResult.RENEWED, RenewalResult.EXPIRED, RenewalResult.TAKEN);
        try (Jedis admin = server.admin()) {
            assertThat(admin.pttl(keys.lockKey("mine"))).isGreaterThan(50_000L);
            assertThat(admin.pttl(keys.lockKey("theirs"))).isLessThanOrEqualTo(1_000L);
            assertThat(admin.get(keys.lockKey("theirs"))).isEqualTo("them");
            assertThat(admin.exists(keys.lockKey("gone"))).isFalse();
        }
    }

    @Test
    void renewRejectsBatchesLargerThanConfigured() {
        RedisLockBackend small = RedisLockBackend.builder(client).renewalBatchSize(2).build();
        try (small) {
            assertThat(small.maxBatchSize()).isEqualTo(2);
            assertThatThrownBy(() -> small.renew(List.of(
                    new LeaseRenewal("a", "o", 1_000), new LeaseRenewal("b", "o", 1_000),
                    new LeaseRenewal("c", "o", 1_000))))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("renewalBatchSize");
        }
    }

    @Test
    void everyOperationWorksAfterScriptFlush() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "warm", "a", 10_000);
        try (Jedis admin = server.admin()) {
            admin.scriptFlush();
        }
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "flushed", "a", 10_000)).isInstanceOf(AcquireResult.Acquired.class);
        try (Jedis admin = server.admin()) {
            admin.scriptFlush();
        }
        assertThat(backend.renew(List.of(new LeaseRenewal("flushed", "a", 20_000))))
                .containsExactly(RenewalResult.RENEWED);
        try (Jedis admin = server.admin()) {
            admin.scriptFlush();
        }
        assertThat(backend.release(LockKind.EXCLUSIVE, "flushed", "a", 0)).isEqualTo(ReleaseResult.RELEASED);
    }

    @Test
    void successfulAcquireRunsOneEvalshaThatSetsTheKeyAndWritesTheTokenBack() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "warm-up", "a", 10_000);
        backend.tryAcquire(LockKind.EXCLUSIVE, "hot", "a", 10_000);
        backend.release(LockKind.EXCLUSIVE, "hot", "a", 0);
        Map<String, Long> before = server.commandCalls();
        long totalBefore = server.totalCommandCalls();

        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "hot", "b", 10_000)).isInstanceOf(AcquireResult.Acquired.class);

        Map<String, Long> after = server.commandCalls();
        assertThat(after.get("evalsha") - before.get("evalsha")).isEqualTo(1);
        // SET NX of the lock, then TIME and one SET ... GET that writes the fencing counter and reads its old value.
        assertThat(after.get("set") - before.get("set")).isEqualTo(2);
        assertThat(after.get("time") - before.getOrDefault("time", 0L)).isEqualTo(1);
        assertThat(after.getOrDefault("get", 0L) - before.getOrDefault("get", 0L)).isZero();
        // totalCommandCalls itself ran one INFO (excluded); nothing else ran on the server.
        assertThat(server.totalCommandCalls() - totalBefore).isEqualTo(4);
    }

    @Test
    void acquiringAKeyTheOwnerAlreadyHoldsExtendsItsLeaseWithALargerToken() {
        long first = acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "mine-again", "me", 1_000));

        AcquireResult again = backend.tryAcquire(LockKind.EXCLUSIVE, "mine-again", "me", 60_000);

        assertThat(again).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(acquiredToken(again)).isGreaterThan(first);
        try (Jedis admin = server.admin()) {
            assertThat(admin.get(keys.lockKey("mine-again"))).isEqualTo("me");
            assertThat(admin.pttl(keys.lockKey("mine-again"))).isGreaterThan(30_000L);
        }
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "mine-again", "you", 60_000)).isInstanceOf(AcquireResult.Held.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"{x}", "}abc", "a}b", "with spaces in it", "ключ 日本 🔒", "%7D", "a:b:c"})
    void awkwardKeysLockReleaseAndRenew(String key) {
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "a", 10_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "b", 10_000)).isInstanceOf(AcquireResult.Held.class);
        assertThat(backend.renew(List.of(new LeaseRenewal(key, "a", 20_000)))).containsExactly(RenewalResult.RENEWED);
        assertThat(backend.release(LockKind.EXCLUSIVE, key, "a", 0)).isEqualTo(ReleaseResult.RELEASED);
        try (Jedis admin = server.admin()) {
            assertThat(admin.get(keys.lockKey(key))).isNull();
        }
    }

    @Test
    void pingMeasuresARoundTrip() {
        assertThat(backend.ping()).isPositive();
    }

    @Test
    void standaloneClientUsesOneRenewalGroup() {
        assertThat(backend.isCluster()).isFalse();
        assertThat(backend.nodeOf("a")).isEqualTo(backend.nodeOf("b"));
        RedisLockBackend clustered = RedisLockBackend.builder(client).cluster(true).build();
        try (clustered) {
            assertThat(clustered.nodeOf("a")).isEqualTo(new StoreNode("slot " + keys.slot("a")));
        }
    }

    @Test
    void builderRejectsInvalidSettingsNamingThem() {
        assertThatThrownBy(() -> RedisLockBackend.builder(null)).hasMessageContaining("client");
        assertThatThrownBy(() -> RedisLockBackend.builder(client).keyPrefix("a{b"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("keyPrefix");
        assertThatThrownBy(() -> RedisLockBackend.builder(client).fencingCounterTtl(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fencingCounterTtl");
        assertThatThrownBy(() -> RedisLockBackend.builder(client).renewalBatchSize(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("renewalBatchSize");
    }

    @Test
    void customPrefixIsUsedForEveryKey() {
        RedisLockBackend prefixed = RedisLockBackend.builder(client).keyPrefix("app1:").build();
        try (prefixed; Jedis admin = server.admin()) {
            prefixed.tryAcquire(LockKind.EXCLUSIVE, "k", "a", 10_000);
            assertThat(admin.get("app1:{k}")).isEqualTo("a");
            assertThat(admin.exists("app1:{k}:fence")).isTrue();
        }
    }

    @Test
    void closingTheBackendLeavesTheClientOpen() {
        backend.close();
        assertThat(client.ping()).isEqualTo("PONG");
    }

    private static long acquiredToken(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }
}
