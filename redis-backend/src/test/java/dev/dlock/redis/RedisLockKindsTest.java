package dev.dlock.redis;

import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.resps.Tuple;

/** The scripts of the lock kinds (permits, read/write, fair) against a real redis-server, call by call. */
class RedisLockKindsTest {

    private static final LockKind THREE = LockKind.permits(3);
    private static final Duration BOUND = Duration.ofSeconds(10);

    private static RedisServerProcess server;
    private static RedisClient client;

    private final RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private RedisLockBackend backend;

    @BeforeAll
    static void startRedis() {
        server = RedisServerProcess.start();
        // No failure is tested here: a generous timeout keeps a loaded machine from failing a call.
        client = RedisTestSupport.client(server.host(), server.port(), 5_000);
    }

    @AfterAll
    static void stopRedis() throws Exception {
        RedisTestSupport.closeAll(client, server);
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
    void everyKindIsSupported() {
        assertThat(backend.capabilities().modes()).containsExactlyInAnyOrder(LockKind.Mode.values());
    }

    @Test
    void permitsAdmitUpToTheLimitAndReportWhenTheEarliestExpires() {
        assertThat(backend.tryAcquire(THREE, "p", "a", 20_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(THREE, "p", "b", 5_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(THREE, "p", "c", 30_000)).isInstanceOf(AcquireResult.Acquired.class);

        assertThat(backend.tryAcquire(THREE, "p", "d", 30_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 5_000L));
        try (Jedis admin = server.admin()) {
            assertThat(admin.zcard(keys.permitsKey("p"))).isEqualTo(3);
            // The set lives as long as its latest member, so an abandoned one disappears.
            assertThat(admin.pttl(keys.permitsKey("p"))).isBetween(20_001L, 30_000L);
        }
        assertThat(backend.release(THREE, "p", "b", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.tryAcquire(THREE, "p", "d", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    void aHolderAskingAgainWhenAllPermitsAreTakenGetsItsPermitWithAFreshToken() {
        long first = token(backend.tryAcquire(THREE, "p", "a", 1_000));
        backend.tryAcquire(THREE, "p", "b", 30_000);
        backend.tryAcquire(THREE, "p", "c", 30_000);

        long retried = token(backend.tryAcquire(THREE, "p", "a", 30_000));

        assertThat(retried).isGreaterThan(first);
        try (Jedis admin = server.admin()) {
            assertThat(admin.zcard(keys.permitsKey("p"))).isEqualTo(3);
            assertThat(admin.zscore(keys.permitsKey("p"), "a") - serverMillis(admin)).isGreaterThan(20_000);
        }
    }

    @Test
    void anExpiredPermitIsPurgedAndItsPlaceTaken() {
        backend.tryAcquire(THREE, "p", "short", 100);
        backend.tryAcquire(THREE, "p", "b", 30_000);
        backend.tryAcquire(THREE, "p", "c", 30_000);

        await("the short permit to expire and free a place", BOUND,
                () -> backend.tryAcquire(THREE, "p", "d", 30_000) instanceof AcquireResult.Acquired);

        try (Jedis admin = server.admin()) {
            assertThat(admin.zrange(keys.permitsKey("p"), 0, -1)).containsExactlyInAnyOrder("b", "c", "d");
        }
        assertThat(backend.renew(List.of(new LeaseRenewal("p", "short", 30_000, THREE)))).containsExactly(RenewalResult.EXPIRED);
        assertThat(backend.release(THREE, "p", "short", 0)).as("a permit that ran out unreleased, as an exclusive lease")
                .isEqualTo(ReleaseResult.NOT_OWNER);
    }

    @Test
    void aPermitRenewsWhileHeldAndReleasesOnce() {
        backend.tryAcquire(THREE, "p", "a", 1_000);

        assertThat(backend.renew(List.of(new LeaseRenewal("p", "a", 40_000, THREE)))).containsExactly(RenewalResult.RENEWED);
        try (Jedis admin = server.admin()) {
            assertThat(admin.zscore(keys.permitsKey("p"), "a") - serverMillis(admin)).isGreaterThan(30_000);
            assertThat(admin.pttl(keys.permitsKey("p"))).isGreaterThan(30_000L);
        }
        assertThat(backend.release(THREE, "p", "a", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.release(THREE, "p", "a", 0)).isEqualTo(ReleaseResult.ALREADY_FREE);
        try (Jedis admin = server.admin()) {
            String record = keys.lastReleaseKey(THREE, "p");
            assertThat(record).as("the record beside the permits, under their hash tag").startsWith(keys.lockKey("p") + ":");
            assertThat(admin.zscore(record, "a") - serverMillis(admin)).as("how long a's record lives")
                    .isBetween(RedisLockBackend.RELEASE_RECORD_MILLIS - 5_000.0, (double) RedisLockBackend.RELEASE_RECORD_MILLIS);
            assertThat(admin.pttl(record)).as("the record set's own expiry").isBetween(1L, RedisLockBackend.RELEASE_RECORD_MILLIS);
        }
        assertThat(backend.renew(List.of(new LeaseRenewal("p", "a", 40_000, THREE)))).containsExactly(RenewalResult.EXPIRED);
    }

    @Test
    void permitsAreASeparateLockFromTheExclusiveOne() {
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "k", "x", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(THREE, "k", "p", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(LockKind.permits(1), "k2", "p", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(LockKind.permits(1), "k2", "q", 30_000)).isInstanceOf(AcquireResult.Held.class);
    }

    @Test
    void readersShareAndAWriterWaitsForThemWithAnIntentThatStopsNewReaders() {
        assertThat(backend.tryAcquire(LockKind.READ, "rw", "r1", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(LockKind.READ, "rw", "r2", 2_000)).isInstanceOf(AcquireResult.Acquired.class);

        // The writer comes back before its 3 s intent lapses: within the earliest reader's expiry and a third of it.
        assertThat(backend.tryAcquire(LockKind.WRITE, "rw", "w", 30_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 1_000L));
        try (Jedis admin = server.admin()) {
            assertThat(admin.get(keys.writerWaitingKey("rw"))).isEqualTo("w");
            assertThat(admin.pttl(keys.writerWaitingKey("rw"))).isBetween(1L, 3_000L);
        }
        assertThat(backend.tryAcquire(LockKind.READ, "rw", "r3", 30_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 3_000L));
        // A reader already in asks again (a lost reply): still a reader, with a fresh token.
        long first = token(backend.tryAcquire(LockKind.READ, "rw", "r1", 30_000));
        assertThat(token(backend.tryAcquire(LockKind.READ, "rw", "r1", 30_000))).isGreaterThan(first);

        assertThat(backend.release(LockKind.READ, "rw", "r1", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.release(LockKind.READ, "rw", "r2", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.tryAcquire(LockKind.WRITE, "rw", "w", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        try (Jedis admin = server.admin()) {
            assertThat(admin.exists(keys.writerWaitingKey("rw"))).as("the intent is gone once its writer holds the key").isFalse();
            assertThat(admin.get(keys.writerKey("rw"))).isEqualTo("w");
        }
        assertThat(backend.tryAcquire(LockKind.READ, "rw", "r3", 30_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(3_001L, 30_000L));
        assertThat(backend.tryAcquire(LockKind.WRITE, "rw", "w2", 30_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).isBetween(3_001L, 30_000L));
    }

    @Test
    void theIntentOfAWriterThatStopsAskingLapsesAndReadersComeInAgain() {
        RedisLockBackend shortIntents = RedisLockBackend.builder(client).fairWaiterTimeout(Duration.ofMillis(300)).build();
        try (shortIntents; Jedis admin = server.admin()) {
            shortIntents.tryAcquire(LockKind.READ, "rw", "r1", 30_000);
            assertThat(shortIntents.tryAcquire(LockKind.WRITE, "rw", "dead-writer", 30_000)).isInstanceOf(AcquireResult.Held.class);
            assertThat(shortIntents.tryAcquire(LockKind.READ, "rw", "r2", 30_000)).isInstanceOf(AcquireResult.Held.class);

            await("the dead writer's intent to lapse", BOUND, () -> !admin.exists(keys.writerWaitingKey("rw")));
            assertThat(shortIntents.tryAcquire(LockKind.READ, "rw", "r2", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        }
    }

    @Test
    void aWithdrawnWriterLetsReadersInAtOnceAndOnlyItsOwnIntentIsDropped() {
        backend.tryAcquire(LockKind.READ, "rw", "r1", 30_000);
        backend.tryAcquire(LockKind.WRITE, "rw", "w", 30_000);

        backend.withdraw(LockKind.WRITE, "rw", "someone-else");
        assertThat(backend.tryAcquire(LockKind.READ, "rw", "r2", 30_000)).isInstanceOf(AcquireResult.Held.class);
        backend.withdraw(LockKind.WRITE, "rw", "w");
        assertThat(backend.tryAcquire(LockKind.READ, "rw", "r2", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    void aWriteLockReleasesLikeAnExclusiveOneAndExpiredReadersDoNotBlockIt() {
        backend.tryAcquire(LockKind.READ, "rw", "short-reader", 100);
        await("the short reader to expire", BOUND,
                () -> backend.tryAcquire(LockKind.WRITE, "rw", "w", 30_000) instanceof AcquireResult.Acquired);
        long token = token(backend.tryAcquire(LockKind.WRITE, "rw", "w", 30_000));
        try (Jedis admin = server.admin()) {
            assertThat(admin.exists(keys.readersKey("rw"))).isFalse();
        }

        assertThat(backend.renew(List.of(new LeaseRenewal("rw", "w", 40_000, LockKind.WRITE)))).containsExactly(RenewalResult.RENEWED);
        assertThat(backend.renew(List.of(new LeaseRenewal("rw", "x", 40_000, LockKind.WRITE)))).containsExactly(RenewalResult.TAKEN);
        assertThat(backend.release(LockKind.WRITE, "rw", "x", 0)).isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(backend.release(LockKind.WRITE, "rw", "w", token)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.release(LockKind.WRITE, "rw", "w", token)).isEqualTo(ReleaseResult.ALREADY_FREE);
        assertThat(backend.tryAcquire(LockKind.READ, "rw", "r", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        // The record of w's own release says this is a repeat: w's release landed while w held the key, so the reader
        // that came since cannot have overlapped w's section (the answer was "not owner" while tokens told it).
        assertThat(backend.release(LockKind.WRITE, "rw", "w", token)).as("repeated after a reader took the key")
                .isEqualTo(ReleaseResult.ALREADY_FREE);
    }

    @Test
    void tokensIncreaseAcrossEveryKindOfOneKey() {
        long previous = 0;
        for (LockKind kind : List.of(LockKind.EXCLUSIVE, THREE, LockKind.READ, LockKind.FAIR, LockKind.WRITE, THREE,
                LockKind.EXCLUSIVE, LockKind.READ)) {
            String owner = "owner-" + previous;
            AcquireResult taken = backend.tryAcquire(kind, "t", owner, 30_000);
            // Exclusive locks issue their token when asked for it, the other kinds with the acquisition.
            long token = ((AcquireResult.Acquired) taken).tokenIssued() ? token(taken)
                    : backend.issueFencingToken(kind, "t", owner).orElseThrow();
            assertThat(token).as("token of %s", kind).isGreaterThan(previous);
            assertThat(backend.release(kind, "t", owner, token)).isEqualTo(ReleaseResult.RELEASED);
            previous = token;
        }
    }

    @Test
    void aRenewBatchMixingKindsAnswersEachLeaseInRequestOrder() {
        backend.tryAcquire(LockKind.EXCLUSIVE, "m1", "o", 1_000);
        backend.tryAcquire(LockKind.READ, "m2", "o", 1_000);
        backend.tryAcquire(THREE, "m3", "o", 1_000);
        backend.tryAcquire(LockKind.WRITE, "m4", "o", 1_000);
        backend.tryAcquire(LockKind.FAIR, "m5", "o", 1_000);
        backend.tryAcquire(LockKind.EXCLUSIVE, "m6", "other", 1_000);
        List<LeaseRenewal> batch = List.of(new LeaseRenewal("m1", "o", 60_000), new LeaseRenewal("m2", "o", 60_000, LockKind.READ),
                new LeaseRenewal("gone", "o", 60_000, THREE), new LeaseRenewal("m3", "o", 60_000, THREE),
                new LeaseRenewal("m4", "o", 60_000, LockKind.WRITE), new LeaseRenewal("m5", "o", 60_000, LockKind.FAIR),
                new LeaseRenewal("m6", "o", 60_000), new LeaseRenewal("m2", "x", 60_000, LockKind.READ));

        assertThat(backend.renew(batch)).containsExactly(RenewalResult.RENEWED, RenewalResult.RENEWED, RenewalResult.EXPIRED,
                RenewalResult.RENEWED, RenewalResult.RENEWED, RenewalResult.RENEWED, RenewalResult.TAKEN, RenewalResult.EXPIRED);
        try (Jedis admin = server.admin()) {
            for (String renewed : List.of(keys.lockKey("m1"), keys.readersKey("m2"), keys.permitsKey("m3"), keys.writerKey("m4"),
                    keys.lockKey("m5"))) {
                assertThat(admin.pttl(renewed)).as(renewed).isGreaterThan(30_000L);
            }
        }
    }

    @Test
    void fairWaitersAreServedInArrivalOrderAndAskedBackWithinAThirdOfTheTimeout() {
        backend.tryAcquire(LockKind.FAIR, "f", "a", 30_000);
        for (String waiter : List.of("b", "c", "d")) {
            assertThat(backend.tryAcquire(LockKind.FAIR, "f", waiter, 30_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                    held -> assertThat(held.remainingTtlMillis()).isBetween(1L, 1_000L));
        }
        backend.release(LockKind.FAIR, "f", "a", 0);

        assertThat(backend.tryAcquire(LockKind.FAIR, "f", "d", 30_000)).isInstanceOf(AcquireResult.Held.class);
        assertThat(backend.tryAcquire(LockKind.FAIR, "f", "c", 30_000)).isInstanceOf(AcquireResult.Held.class);
        long first = token(backend.tryAcquire(LockKind.FAIR, "f", "b", 30_000));
        // b's reply was lost and its client asks again: still b's, fresh token, and b is out of the queue.
        assertThat(token(backend.tryAcquire(LockKind.FAIR, "f", "b", 30_000))).isGreaterThan(first);
        try (Jedis admin = server.admin()) {
            assertThat(admin.zrange(keys.fairQueueKey("f"), 0, -1)).containsExactly("c", "d");
            assertThat(admin.zrange(keys.fairSeenKey("f"), 0, -1)).containsExactlyInAnyOrder("c", "d");
        }
        backend.release(LockKind.FAIR, "f", "b", 0);
        assertThat(backend.tryAcquire(LockKind.FAIR, "f", "d", 30_000)).isInstanceOf(AcquireResult.Held.class);
        assertThat(backend.tryAcquire(LockKind.FAIR, "f", "c", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    void anExclusiveAcquisitionMayBargeButNeverOverlapsAFairHolder() {
        backend.tryAcquire(LockKind.FAIR, "f", "a", 30_000);
        backend.tryAcquire(LockKind.FAIR, "f", "b", 30_000);
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "f", "x", 30_000)).isInstanceOf(AcquireResult.Held.class);
        backend.release(LockKind.FAIR, "f", "a", 0);

        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "f", "x", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(backend.tryAcquire(LockKind.FAIR, "f", "b", 30_000)).isInstanceOf(AcquireResult.Held.class);
        assertThat(backend.release(LockKind.EXCLUSIVE, "f", "x", 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(backend.tryAcquire(LockKind.FAIR, "f", "b", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    void aWithdrawnFairWaiterLeavesTheQueueAndTheNextIsWoken() throws Exception {
        backend.tryAcquire(LockKind.FAIR, "f", "a", 30_000);
        backend.tryAcquire(LockKind.FAIR, "f", "b", 30_000);
        backend.tryAcquire(LockKind.FAIR, "f", "c", 30_000);
        backend.release(LockKind.FAIR, "f", "a", 0);
        CountDownLatch woken = new CountDownLatch(1);
        try (var subscription = backend.capabilities().releaseNotices().orElseThrow().subscribe("f", woken::countDown)) {
            assertThat(subscription.awaitActive(BOUND)).isTrue();

            backend.withdraw(LockKind.FAIR, "f", "b");

            assertThat(woken.await(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                    .as("the first waiter left a free lock: the next one hears of it").isTrue();
        }
        assertThat(backend.tryAcquire(LockKind.FAIR, "f", "c", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
        try (Jedis admin = server.admin()) {
            assertThat(admin.exists(keys.fairQueueKey("f"), keys.fairSeenKey("f"))).isZero();
        }
    }

    @Test
    void deadWaitersDelayTheNextByOneWaiterTimeoutTogetherNotOneEach() {
        RedisLockBackend fair = RedisLockBackend.builder(client).fairWaiterTimeout(Duration.ofSeconds(1)).build();
        try (fair; Jedis admin = server.admin()) {
            fair.tryAcquire(LockKind.FAIR, "f", "holder", 30_000);
            for (String dead : List.of("dead-1", "dead-2", "dead-3")) {
                assertThat(fair.tryAcquire(LockKind.FAIR, "f", dead, 30_000)).isInstanceOf(AcquireResult.Held.class);
            }
            long lastDeadAsked = serverMillis(admin);
            fair.release(LockKind.FAIR, "f", "holder", 0);

            askUntilAcquired(fair, LockKind.FAIR, "f", "live");
            long waited = serverMillis(admin) - lastDeadAsked;

            assertThat(waited).as("the dead waiters kept their places for the timeout").isGreaterThanOrEqualTo(1_000);
            // One timeout each would be three; one together, plus a third of it between asks, leaves slack for a busy machine.
            assertThat(waited).as("three dead waiters cost one timeout together").isLessThan(3_000);
        }
    }

    @Test
    void aLiveWaiterKeepsItsPlaceForThreeWaiterTimeoutsAndThenGetsTheLock() {
        RedisLockBackend fair = RedisLockBackend.builder(client).fairWaiterTimeout(Duration.ofMillis(300)).build();
        try (fair; Jedis admin = server.admin()) {
            fair.tryAcquire(LockKind.FAIR, "f", "holder", 30_000);
            long start = serverMillis(admin);
            long asks = 0;
            while (serverMillis(admin) - start < 900) {
                AcquireResult result = fair.tryAcquire(LockKind.FAIR, "f", "patient", 30_000);
                asks++;
                pause(((AcquireResult.Held) result).remainingTtlMillis());
            }
            assertThat(fair.tryAcquire(LockKind.FAIR, "f", "late", 30_000)).isInstanceOf(AcquireResult.Held.class);
            fair.release(LockKind.FAIR, "f", "holder", 0);

            assertThat(fair.tryAcquire(LockKind.FAIR, "f", "late", 30_000)).isInstanceOf(AcquireResult.Held.class);
            assertThat(fair.tryAcquire(LockKind.FAIR, "f", "patient", 30_000)).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(asks).isGreaterThanOrEqualTo(3);
        }
    }

    @Test
    void seenTimesNeverLieAheadOfTheServerClockAndAbandonedQueuesExpire() {
        RedisLockBackend fair = RedisLockBackend.builder(client).fairWaiterTimeout(Duration.ofMillis(300)).build();
        try (fair; Jedis admin = server.admin()) {
            for (int cycle = 0; cycle < 50; cycle++) {
                List<String> owners = List.of("holder-" + cycle, "waiter-a-" + cycle, "waiter-b-" + cycle);
                assertThat(fair.tryAcquire(LockKind.FAIR, "f", owners.get(0), 30_000)).isInstanceOf(AcquireResult.Acquired.class);
                fair.tryAcquire(LockKind.FAIR, "f", owners.get(1), 30_000);
                fair.tryAcquire(LockKind.FAIR, "f", owners.get(2), 30_000);
                List<Tuple> seen = admin.zrangeWithScores(keys.fairSeenKey("f"), 0, -1);
                long now = serverMillis(admin);
                assertThat(seen).hasSize(2).allSatisfy(entry -> assertThat(entry.getScore())
                        .as("seen of %s", entry.getElement()).isLessThanOrEqualTo(now));
                assertThat(admin.pttl(keys.fairQueueKey("f"))).isBetween(1L, 900L);
                assertThat(admin.pttl(keys.fairSeenKey("f"))).isBetween(1L, 900L);
                for (String owner : owners) {
                    askUntilAcquired(fair, LockKind.FAIR, "f", owner);
                    fair.release(LockKind.FAIR, "f", owner, 0);
                }
            }
            fair.tryAcquire(LockKind.FAIR, "f", "holder", 30_000);
            fair.tryAcquire(LockKind.FAIR, "f", "abandoned-1", 30_000);
            fair.tryAcquire(LockKind.FAIR, "f", "abandoned-2", 30_000);
            await("the abandoned queue to expire", BOUND,
                    () -> admin.exists(keys.fairQueueKey("f"), keys.fairSeenKey("f")) == 0);
        }
    }

    @Test
    void aRestartedApplicationIsNotBlockedByItsOldQueueEntriesLongerThanTheWaiterTimeout() {
        RedisLockBackend fair = RedisLockBackend.builder(client).fairWaiterTimeout(Duration.ofSeconds(1)).build();
        try (fair; Jedis admin = server.admin()) {
            // The old process: a holder whose short lease is never released, and waiters that never ask again.
            fair.tryAcquire(LockKind.FAIR, "f", "old-holder", 200);
            fair.tryAcquire(LockKind.FAIR, "f", "old-waiter-1", 30_000);
            fair.tryAcquire(LockKind.FAIR, "f", "old-waiter-2", 30_000);
            fair.tryAcquire(LockKind.FAIR, "f", "old-waiter-3", 30_000);
            long crashedAt = serverMillis(admin);

            askUntilAcquired(fair, LockKind.FAIR, "f", "new-1");
            assertThat(serverMillis(admin) - crashedAt).as("three old waiters cost one timeout together").isLessThan(3_000);
            assertThat(admin.zrange(keys.fairQueueKey("f"), 0, -1)).doesNotContain("old-waiter-1", "old-waiter-2", "old-waiter-3");
        }
    }

    @Test
    void badArgumentsAreRefusedWithTheirName() {
        assertThatThrownBy(() -> backend.tryAcquire(THREE, "p", "", 1_000)).hasMessageContaining("owner");
        assertThatThrownBy(() -> backend.tryAcquire(THREE, "p", "a", 0)).hasMessageContaining("leaseMillis");
        assertThatThrownBy(() -> RedisLockBackend.builder(client).fairWaiterTimeout(Duration.ofMillis(99)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("fairWaiterTimeout")
                .hasMessageContaining("100 ms");
        assertThatThrownBy(() -> RedisLockBackend.builder(client).fairWaiterTimeout(null))
                .hasMessageContaining("fairWaiterTimeout");
    }

    static long token(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }

    static long serverMillis(Jedis admin) {
        List<String> time = admin.time();
        return Long.parseLong(time.get(0)) * 1000 + Long.parseLong(time.get(1)) / 1000;
    }

    /** Asks like the engine does: again after each Held's TTL, until acquired (bounded). */
    static long askUntilAcquired(RedisLockBackend backend, LockKind kind, String key, String owner) {
        long deadline = System.nanoTime() + BOUND.toNanos();
        while (true) {
            AcquireResult result = backend.tryAcquire(kind, key, owner, 30_000);
            if (result instanceof AcquireResult.Acquired acquired) {
                return acquired.fencingToken();
            }
            assertThat(System.nanoTime() - deadline).as("%s acquired %s within %s", owner, key, BOUND).isNegative();
            pause(((AcquireResult.Held) result).remainingTtlMillis());
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(Math.max(1, millis));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
