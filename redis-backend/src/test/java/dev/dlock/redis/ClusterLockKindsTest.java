package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.ReleaseNotices.Subscription;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClusterClient;

/**
 * Every lock kind on a three-master Redis Cluster: each script declares all its keys, which share the
 * logical key's hash tag (a key in another slot would fail with CROSSSLOT), on whichever master owns the
 * slot; renew batches mixing kinds and slots reach every node; releases of every kind notify waiters.
 */
class ClusterLockKindsTest {

    private static final Duration BOUND = Duration.ofSeconds(10);
    private static final List<LockKind> KINDS = List.of(LockKind.EXCLUSIVE, LockKind.FAIR, LockKind.READ, LockKind.WRITE,
            LockKind.permits(2));

    private static RedisClusterSetup cluster;
    private static RedisClusterClient client;
    private static RedisLockBackend backend;

    @BeforeAll
    static void startCluster() {
        cluster = RedisClusterSetup.start(3, 0);
        client = RedisClusterClient.builder().nodes(cluster.seeds())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(RedisTestSupport.CLIENT_TIMEOUT_MILLIS).build())
                .build();
        backend = RedisLockBackend.builder(client).build();
    }

    @AfterAll
    static void stopCluster() throws Exception {
        RedisTestSupport.closeAll(backend, client, cluster);
    }

    /** The token of {@code owner}'s acquisition {@code taken}, asked for when it issued none (an exclusive lock issues on request). */
    private static long issued(LockKind kind, String key, String owner, AcquireResult taken) {
        AcquireResult.Acquired acquired = (AcquireResult.Acquired) taken;
        return acquired.tokenIssued() ? acquired.fencingToken() : backend.issueFencingToken(kind, key, owner).orElseThrow();
    }

    @Test
    void everyKindNamesItsHoldersAndIsForcedFreeOnEveryMaster() {
        HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();
        for (RedisServerProcess master : cluster.initialMasters()) {
            String key = RedisTestSupport.keyOwnedBy(cluster, master, "{holders} on " + master.port() + " #");
            for (LockKind kind : KINDS) {
                long token = issued(kind, key, "holder", backend.tryAcquire(kind, key, "holder", 30_000));
                assertThat(inspection.holders(kind, key)).as("%s on %s", kind, master.port())
                        .extracting(StoredHolder::owner).containsExactly("holder");
                assertThat(inspection.forceRelease(kind, key)).extracting(StoredHolder::owner).containsExactly("holder");
                assertThat(inspection.holders(kind, key)).isEmpty();
                assertThat(issued(kind, key, "next", backend.tryAcquire(kind, key, "next", 30_000))).isGreaterThan(token);
                assertThat(backend.release(kind, key, "next", 0)).isEqualTo(ReleaseResult.RELEASED);
            }
        }
    }

    @Test
    void everyKindTakesRenewsAndReleasesOnEveryMaster() {
        for (RedisServerProcess master : cluster.initialMasters()) {
            String key = RedisTestSupport.keyOwnedBy(cluster, master, "{kinds} on " + master.port() + " #");
            long previous = 0;
            for (LockKind kind : KINDS) {
                long token = issued(kind, key, "me", backend.tryAcquire(kind, key, "me", 30_000));
                assertThat(token).as("%s on %s", kind, master.port()).isGreaterThan(previous);
                previous = token;
                assertThat(backend.tryAcquire(kind, key, "me", 30_000)).as("%s retried", kind)
                        .isInstanceOf(AcquireResult.Acquired.class);
                assertThat(backend.renew(List.of(new LeaseRenewal(key, "me", 40_000, kind)))).containsExactly(RenewalResult.RENEWED);
                assertThat(backend.release(kind, key, "me", token)).isEqualTo(ReleaseResult.RELEASED);
                backend.withdraw(kind, key, "me");
            }
        }
    }

    @Test
    void waitingKindsQueueAndWithdrawOnTheMasterOfTheirSlot() {
        for (RedisServerProcess master : cluster.initialMasters()) {
            String key = RedisTestSupport.keyOwnedBy(cluster, master, "waiting-" + master.port() + "-");
            backend.tryAcquire(LockKind.FAIR, key, "holder", 30_000);
            assertThat(backend.tryAcquire(LockKind.FAIR, key, "waiter", 30_000)).isInstanceOf(AcquireResult.Held.class);
            backend.withdraw(LockKind.FAIR, key, "waiter");
            backend.release(LockKind.FAIR, key, "holder", 0);

            backend.tryAcquire(LockKind.READ, key, "reader", 30_000);
            assertThat(backend.tryAcquire(LockKind.WRITE, key, "writer", 30_000)).isInstanceOf(AcquireResult.Held.class);
            assertThat(backend.tryAcquire(LockKind.READ, key, "reader-2", 30_000)).isInstanceOf(AcquireResult.Held.class);
            backend.withdraw(LockKind.WRITE, key, "writer");
            assertThat(backend.tryAcquire(LockKind.READ, key, "reader-2", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
            backend.release(LockKind.READ, key, "reader", 0);
            backend.release(LockKind.READ, key, "reader-2", 0);
        }
    }

    @Test
    void aRenewBatchMixingKindsAndMastersAnswersInRequestOrder() {
        List<LeaseRenewal> batch = new ArrayList<>();
        List<RenewalResult> expected = new ArrayList<>();
        for (RedisServerProcess master : cluster.initialMasters()) {
            for (LockKind kind : KINDS) {
                String key = RedisTestSupport.keyOwnedBy(cluster, master, "batch-" + kind + "-");
                backend.tryAcquire(kind, key, "o", 1_000);
                batch.add(new LeaseRenewal(key, "o", 60_000, kind));
                expected.add(RenewalResult.RENEWED);
                batch.add(new LeaseRenewal(key, "stranger", 60_000, kind));
                expected.add(kind.shared() ? RenewalResult.EXPIRED : RenewalResult.TAKEN);
            }
        }

        assertThat(backend.renew(batch)).containsExactlyElementsOf(expected);
        for (LeaseRenewal renewal : batch) {
            if (renewal.owner().equals("o")) {
                backend.release(renewal.kind(), renewal.key(), "o", 0);
            }
        }
    }

    @Test
    void theReleaseOfEveryKindNotifiesTheKeysWaiters() throws Exception {
        for (LockKind kind : KINDS) {
            String key = "notice-" + kind;
            CountDownLatch released = new CountDownLatch(1);
            try (Subscription subscription = backend.capabilities().releaseNotices().orElseThrow().subscribe(key, released::countDown)) {
                assertThat(subscription.awaitActive(BOUND)).isTrue();
                backend.tryAcquire(kind, key, "a", 10_000);
                if (kind.mode() == LockKind.Mode.EXCLUSIVE || kind.mode() == LockKind.Mode.FAIR) {
                    // Their release tells waiters only once one asked; the shared kinds' releases always do.
                    RedisTestSupport.askAsAnotherOwner(backend, key);
                }
                backend.release(kind, key, "a", 0);
                assertThat(released.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("notice of %s", kind).isTrue();
            }
        }
    }
}
