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

    /**
     * A waiting acquisition asks again through the script alone: it marks the holder in that round trip (a holding
     * JVM passes the key on locally until it sees the mark), and a plain SET first would only add one. Its first
     * attempt after it took the key or withdrew is a plain SET again.
     */
    @Test
    void anAcquisitionRefusedOnceAsksAgainWithTheScriptAlone() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "waited", "holder", 30_000);
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "waited", "waiter", 30_000)).isInstanceOf(AcquireResult.Held.class);

        Map<String, Long> before = server.commandCalls();
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "waited", "waiter", 30_000)).isInstanceOf(AcquireResult.Held.class);
        assertThat(server.commandCallsSince(before)).as("commands of the waiter's second attempt")
                .containsEntry("evalsha", 1L).containsEntry("set", 1L);

        assertThat(backend.release(LockKind.EXCLUSIVE, "waited", "holder", 0)).isEqualTo(ReleaseResult.RELEASED);
        before = server.commandCalls();
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "waited", "waiter", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(server.commandCallsSince(before)).as("commands of the attempt that takes the freed key")
                .containsEntry("evalsha", 1L).containsEntry("set", 1L);
        assertThat(backend.release(LockKind.EXCLUSIVE, "waited", "waiter", 0)).isEqualTo(ReleaseResult.RELEASED);

        before = server.commandCalls();
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "waited", "waiter", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(server.commandCallsSince(before)).as("commands of a later acquisition by the same owner")
                .doesNotContainKey("evalsha").containsEntry("set", 1L);
    }

    @Test
    void acquireTakesAFreeKeyAndReportsTheRemainingTtlWhenHeld() {
        AcquireResult first = backend.tryAcquire(LockKind.EXCLUSIVE, "order-1", "owner-a", 30_000);
        AcquireResult second = backend.tryAcquire(LockKind.EXCLUSIVE, "order-1", "owner-b", 30_000);

        assertThat(first).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(second).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 30_000L));
        Map<String, Long> before = server.commandCalls();
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "order-1", "owner-c", 30_000)).isInstanceOf(AcquireResult.Held.class);
        // The refused SET NX sends the acquire script, which tries again, marks the holder (once) and reads the TTL.
        assertThat(server.commandCallsSince(before)).as("commands of a refused acquisition")
                .containsEntry("evalsha", 1L).containsEntry("set", 2L).containsEntry("get", 1L).containsEntry("pttl", 1L);
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
            long token = takenWithToken(backend, "order-2", "owner-" + i);
            assertThat(token).isGreaterThan(previous);
            previous = token;
            assertThat(backend.release(LockKind.EXCLUSIVE, "order-2", "owner-" + i, 0)).isEqualTo(ReleaseResult.RELEASED);
        }
    }

    @Test
    void fencingTokensStillIncreaseAfterTheCounterIsDeleted() {
        long before = takenWithToken(backend, "order-3", "a");
        backend.release(LockKind.EXCLUSIVE, "order-3", "a", 0);
        try (Jedis admin = server.admin()) {
            admin.del(keys.counterKey("order-3"));
        }
        long after = takenWithToken(backend, "order-3", "b");
        assertThat(after).isGreaterThan(before);
    }

    @Test
    void fencingTokensStillIncreaseAfterTheCounterExpires() {
        RedisLockBackend shortCounter = RedisLockBackend.builder(client)
                .fencingCounterTtl(Duration.ofMillis(100)).build();
        try (shortCounter; Jedis admin = server.admin()) {
            long previous = 0;
            for (int round = 0; round < 3; round++) {
                long first = takenWithToken(shortCounter, "order-4", "a" + round);
                shortCounter.release(LockKind.EXCLUSIVE, "order-4", "a" + round, 0);
                long second = takenWithToken(shortCounter, "order-4", "b" + round);
                shortCounter.release(LockKind.EXCLUSIVE, "order-4", "b" + round, 0);
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
        takenWithToken(backend, "order-5", "a");
        try (Jedis admin = server.admin()) {
            assertThat(admin.pttl(keys.counterKey("order-5")))
                    .isBetween(Duration.ofHours(23).toMillis(), Duration.ofHours(24).toMillis());
        }
    }

    @Test
    void releaseByTheOwnerDeletesTheKeyAndRecordsItselfSoThatARepeatIsAlreadyFree() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "order-6", "a", 10_000);
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-6", "a", 0)).isEqualTo(ReleaseResult.RELEASED);
        try (Jedis admin = server.admin()) {
            assertThat(admin.exists(keys.lockKey("order-6"))).isFalse();
            assertThat(admin.get(keys.lastReleaseKey(LockKind.EXCLUSIVE, "order-6"))).as("the record of the release").isEqualTo("a");
            assertThat(admin.pttl(keys.lastReleaseKey(LockKind.EXCLUSIVE, "order-6"))).as("how long the record lives")
                    .isBetween(1L, RedisLockBackend.RELEASE_RECORD_MILLIS);
        }
        // The repeat of a release whose reply was lost; the token plays no part (none was issued).
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-6", "a", 0)).as("repeated").isEqualTo(ReleaseResult.ALREADY_FREE);
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-6", "never-held", 0)).as("an owner that never held it")
                .isEqualTo(ReleaseResult.NOT_OWNER);
    }

    /**
     * Without a token written at acquisition, a lease that ran out unreleased reads as lost even when nobody took the
     * key since: stricter than "already free", and safe (the engine reports the loss). Another owner's release since
     * replaces the record, so a late repeat reads as lost too.
     */
    @Test
    void aLeaseThatRanOutUnreleasedOrWhoseRecordAnotherReleaseReplacedIsNotOwner() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "order-8", "a", 30);
        await("the lease to run out", Duration.ofSeconds(5), () -> {
            try (Jedis admin = server.admin()) {
                return !admin.exists(keys.lockKey("order-8"));
            }
        });
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-8", "a", 0)).as("ran out, nobody took it").isEqualTo(ReleaseResult.NOT_OWNER);

        backend.tryAcquire(LockKind.EXCLUSIVE, "order-8", "b", 10_000);
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-8", "b", 0)).isEqualTo(ReleaseResult.RELEASED);
        backend.tryAcquire(LockKind.EXCLUSIVE, "order-8", "c", 10_000);
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-8", "c", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.release(LockKind.EXCLUSIVE, "order-8", "b", 0)).as("b's repeat after c took and released the key")
                .isEqualTo(ReleaseResult.NOT_OWNER);
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
    void aFreeKeyIsTakenWithOnePlainSetAndItsTokenIsIssuedByOneScriptWhenAskedFor() {
        takenWithToken(backend, "warm-up", "a");
        backend.tryAcquire(LockKind.EXCLUSIVE, "hot", "a", 10_000);
        backend.release(LockKind.EXCLUSIVE, "hot", "a", 0);
        Map<String, Long> before = server.commandCalls();
        long totalBefore = server.totalCommandCalls();

        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "hot", "b", 10_000)).as("the acquisition")
                .isEqualTo(AcquireResult.Acquired.tokenOnRequest());

        // SET NX PX and nothing else: no script. totalCommandCalls itself runs one INFO (excluded).
        assertThat(server.commandCallsSince(before)).as("commands of an uncontended acquisition").containsExactly(Map.entry("set", 1L));
        assertThat(server.totalCommandCalls() - totalBefore).isEqualTo(1);

        Map<String, Long> beforeToken = server.commandCalls();
        long token = backend.issueFencingToken(LockKind.EXCLUSIVE, "hot", "b").orElseThrow();
        assertThat(token).isPositive();
        // One script: GET of the owner, then TIME and one SET ... GET that writes the counter and reads its old value.
        assertThat(server.commandCallsSince(beforeToken)).as("commands of the token's issuance")
                .containsExactlyInAnyOrderEntriesOf(Map.of("evalsha", 1L, "get", 1L, "time", 1L, "set", 1L));
    }

    @Test
    void acquiringAKeyTheOwnerAlreadyHoldsExtendsItsLeaseWithALargerToken() {
        long first = takenWithToken(backend, "mine-again", "me");
        backend.renew(List.of(new LeaseRenewal("mine-again", "me", 1_000)));

        // A retried SET NX: refused, since the key exists; the acquire script finds it the owner's.
        AcquireResult again = backend.tryAcquire(LockKind.EXCLUSIVE, "mine-again", "me", 60_000);

        assertThat(again).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.issueFencingToken(LockKind.EXCLUSIVE, "mine-again", "me").orElseThrow()).isGreaterThan(first);
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
            takenWithToken(prefixed, "k", "a");
            assertThat(admin.get("app1:{k}")).isEqualTo("a");
            assertThat(admin.exists("app1:{k}:fence")).isTrue();
            prefixed.release(LockKind.EXCLUSIVE, "k", "a", 0);
            assertThat(admin.get("app1:{k}:released-by")).isEqualTo("a");
        }
    }

    @Test
    void closingTheBackendLeavesTheClientOpen() {
        backend.close();
        assertThat(client.ping()).isEqualTo("PONG");
    }

    /** Takes {@code key} for {@code owner} (the key must be free) and asks for its token, as a holder that reads it does. */
    private static long takenWithToken(RedisLockBackend store, String key, String owner) {
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner, 10_000)).isInstanceOf(AcquireResult.Acquired.class);
        return store.issueFencingToken(LockKind.EXCLUSIVE, key, owner).orElseThrow();
    }
}
