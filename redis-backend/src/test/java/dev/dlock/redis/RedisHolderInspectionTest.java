package dev.dlock.redis;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.testkit.OtherJvmHolder;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Who holds a key in Redis, seen from another JVM than the holder's, and an operator's forced release. */
class RedisHolderInspectionTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static RedisServerProcess redis;
    private static RedisClient client;

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
        client = RedisClient.create(redis.host(), redis.port());
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

    @Test
    void aHolderInAnotherJvmIsNamedAndAForcedReleaseFreesTheKeyAndTellsIt() throws Exception {
        String key = "orders:" + UUID.randomUUID();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).instanceId("operator").build();
             OtherJvmHolder child = OtherJvmHolder.start(RedisBackendFactory.class, redis.uri(), key, LockKind.EXCLUSIVE, "worker-7",
                     "checkout-worker-3", Duration.ofSeconds(3))) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();

            List<StoredHolder> stored = inspection.holders(LockKind.EXCLUSIVE, key);

            assertThat(stored).hasSize(1);
            LockHolder holder = LockHolder.of(stored.get(0));
            assertThat(holder.instance()).isEqualTo("worker-7");
            assertThat(holder.holder()).isEqualTo("checkout-worker-3");
            assertThat(holder.acquiredAt()).isBetween(Instant.now().minusSeconds(120), Instant.now().plusSeconds(5));
            assertThat(holder.leaseRemaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(3));

            // A waiter of this JVM, asking before the forced release (its refusal marks the key), and woken by it.
            CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
                try (LockHandle handle = locks.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build())) {
                    return handle.fencingToken();
                }
            });
            List<StoredHolder> removed = inspection.forceRelease(LockKind.EXCLUSIVE, key);

            assertThat(removed).extracting(StoredHolder::owner).containsExactly(stored.get(0).owner());
            assertThat(waiter.get(60, TimeUnit.SECONDS)).as("the waiter's token").isGreaterThan(child.fencingToken());
            assertThat(child.awaitExit(Duration.ofSeconds(60))).as("the child's exit code (42: told its lease was lost); its output:\n%s",
                    child.output()).isEqualTo(OtherJvmHolder.EXIT_LEASE_LOST);
        }
    }

    @Test
    void aForcedOutHolderIsToldItsLeaseWasLostWhenItReleasesAndGetsNoToken() {
        String key = "forced:" + UUID.randomUUID();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", 60_000)).isInstanceOf(AcquireResult.Acquired.class);
            long token = backend.issueFencingToken(LockKind.EXCLUSIVE, key, "holder").orElseThrow();

            backend.capabilities().holderInspection().orElseThrow().forceRelease(LockKind.EXCLUSIVE, key);

            assertThat(backend.issueFencingToken(LockKind.EXCLUSIVE, key, "holder")).as("a token asked for once removed").isEmpty();
            // No record of a release of its own: the free key reads "lost", never "released already".
            assertThat(backend.release(LockKind.EXCLUSIVE, key, "holder", token)).isEqualTo(ReleaseResult.NOT_OWNER);
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "next", 60_000)).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(backend.issueFencingToken(LockKind.EXCLUSIVE, key, "next").orElseThrow()).as("the next holder's token")
                    .isGreaterThan(token);
        }
    }

    @Test
    void holdersOfAFreeKeyAreNone() {
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();
            for (LockKind kind : List.of(LockKind.EXCLUSIVE, LockKind.FAIR, LockKind.READ, LockKind.WRITE, LockKind.permits(2))) {
                assertThat(inspection.holders(kind, "free:" + UUID.randomUUID())).as(kind.toString()).isEmpty();
                assertThat(inspection.forceRelease(kind, "free:" + UUID.randomUUID())).as(kind.toString()).isEmpty();
            }
        }
    }

    @Test
    void readingHoldersNeitherExtendsALeaseNorMarksTheKey() throws Exception {
        String key = "read-only:" + UUID.randomUUID();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             Jedis admin = redis.admin()) {
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "a/b/0/c:1", 60_000)).isNotNull();
            long before = admin.pttl(KEYS.lockKey(key));
            // Long enough for a (wrongly) extended lease to read higher than the first reading.
            TimeUnit.MILLISECONDS.sleep(20);

            List<StoredHolder> holders = backend.capabilities().holderInspection().orElseThrow().holders(LockKind.EXCLUSIVE, key);

            long after = admin.pttl(KEYS.lockKey(key));
            assertThat(holders).extracting(StoredHolder::owner).containsExactly("a/b/0/c:1");
            assertThat(holders.get(0).remainingTtlMillis()).isLessThan(before);
            assertThat(after).isLessThan(before);
            assertThat(admin.get(KEYS.lockKey(key))).as("not marked").isEqualTo("a/b/0/c:1");
        }
    }

    @Test
    void aWaitersMarkIsNotPartOfTheOwner() {
        String key = "marked:" + UUID.randomUUID();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", 60_000);
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "waiter", 60_000)).as("refused, so marked")
                    .isInstanceOf(AcquireResult.Held.class);

            assertThat(backend.capabilities().holderInspection().orElseThrow().holders(LockKind.EXCLUSIVE, key))
                    .extracting(StoredHolder::owner).containsExactly("holder");
        }
    }

    @Test
    void sharedKindsAnswerEveryLiveHolderAndAForcedReleaseFreesThemAll() {
        String key = "shared:" + UUID.randomUUID();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             Jedis admin = redis.admin()) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();
            LockKind permits = LockKind.permits(3);
            backend.tryAcquire(permits, key, "first", 60_000);
            backend.tryAcquire(permits, key, "second", 30_000);
            // Expired, but not yet purged by an acquisition: no holder any more.
            admin.zadd(KEYS.permitsKey(key), 1, "gone");
            long fenceBefore = Long.parseLong(admin.get(KEYS.counterKey(key)));

            assertThat(inspection.holders(permits, key)).extracting(StoredHolder::owner).containsExactlyInAnyOrder("first", "second");
            assertThat(inspection.holders(permits, key)).allSatisfy(h -> assertThat(h.remainingTtlMillis()).isBetween(1L, 60_000L));
            assertThat(inspection.forceRelease(permits, key)).extracting(StoredHolder::owner).containsExactlyInAnyOrder("first", "second");

            assertThat(inspection.holders(permits, key)).isEmpty();
            assertThat(Long.parseLong(admin.get(KEYS.counterKey(key)))).as("fencing counter kept").isEqualTo(fenceBefore);
            AcquireResult next = backend.tryAcquire(permits, key, "third", 60_000);
            assertThat(((AcquireResult.Acquired) next).fencingToken()).isGreaterThan(fenceBefore);

            backend.tryAcquire(LockKind.READ, key, "reader", 60_000);
            assertThat(inspection.holders(LockKind.READ, key)).extracting(StoredHolder::owner).containsExactly("reader");
            assertThat(inspection.holders(LockKind.WRITE, key)).isEmpty();
        }
    }
}
