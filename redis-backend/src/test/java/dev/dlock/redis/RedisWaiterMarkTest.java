package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.ReleaseNotices.Subscription;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.redis.RedisServerExtension;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.SetParams;

/**
 * Release notices only when someone waits: a refused attempt marks the holder's value, only a marked release
 * publishes, and the mark survives renewals and hand-offs; a fair holder is marked when others still queue. What
 * users rely on: an uncontended pair costs no notice, and a waiter in another JVM is never left waiting for the
 * holder's lease (or its own re-check) after a release.
 */
class RedisWaiterMarkTest {

    private static final Duration BOUND = Duration.ofSeconds(10);
    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();
    private final RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    @Test
    void anUncontendedAcquireAndReleaseRunFiveCommandsAndPublishNothing() throws Exception {
        try (RedisClient client = RedisTestSupport.client(redis.server()); RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            AtomicInteger notices = new AtomicInteger();
            try (Subscription subscription = backend.capabilities().releaseNotices().orElseThrow().subscribe("quiet", notices::incrementAndGet)) {
                assertThat(subscription.awaitActive(BOUND)).isTrue();
                // The warm-up pair comes after the subscriber has taken its pooled connection for good, so the pair
                // counted below finds a connection in the pool. A new connection's handshake (Jedis' two CLIENT
                // SETINFO) is not the pair's cost, and Redis counts it differently by version: 6.2 runs and counts
                // the unknown subcommand, 7.0 rejects it uncounted, 7.2+ knows it.
                backend.release(LockKind.EXCLUSIVE, "quiet", "a", acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "quiet", "a", 10_000)));
                Map<String, Long> before = redis.server().commandCalls();

                long token = acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "quiet", "a", 10_000));
                assertThat(backend.release(LockKind.EXCLUSIVE, "quiet", "a", token)).isEqualTo(ReleaseResult.RELEASED);

                assertThat(redis.server().commandCallsSince(before))
                        .as("acquire: SET NX (no script, no token); release: EVALSHA, GET, DEL, SET of its record; no PUBLISH")
                        .containsExactlyInAnyOrderEntriesOf(Map.of("evalsha", 1L, "set", 2L, "get", 1L, "del", 1L));
                // A marked release on the same channel publishes; notices arrive in order on one connection.
                CountDownLatch marked = new CountDownLatch(1);
                try (Subscription later = backend.capabilities().releaseNotices().orElseThrow().subscribe("quiet", marked::countDown)) {
                    assertThat(later.awaitActive(BOUND)).isTrue();
                    long next = acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "quiet", "a", 10_000));
                    assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "quiet", "waiter", 10_000)).isInstanceOf(AcquireResult.Held.class);
                    assertThat(backend.release(LockKind.EXCLUSIVE, "quiet", "a", next)).isEqualTo(ReleaseResult.RELEASED);
                    assertThat(marked.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
                }
                assertThat(notices).as("notices: only the marked release's").hasValue(1);
            }
        }
    }

    @Test
    void theMarkOfARefusedAttemptSurvivesRenewalsAndHandOffsAndItsReleasePublishes() throws Exception {
        try (RedisClient client = RedisTestSupport.client(redis.server()); RedisLockBackend backend = RedisLockBackend.builder(client).build();
             Jedis admin = redis.server().admin()) {
            acquiredToken(backend.tryAcquire(LockKind.EXCLUSIVE, "marked", "holder", 10_000));
            long token = backend.issueFencingToken(LockKind.EXCLUSIVE, "marked", "holder").orElseThrow();
            HandOffResult unmarked = backend.handOff("marked", "holder", "holder-2", 0);
            assertThat(unmarked).isInstanceOf(HandOffResult.Passed.class);
            assertThat(((HandOffResult.Passed) unmarked).othersWaiting()).as("nobody else asked yet").isFalse();

            AcquireResult refused = backend.tryAcquire(LockKind.EXCLUSIVE, "marked", "waiter", 10_000);
            assertThat(refused).isInstanceOf(AcquireResult.Held.class);
            assertThat(((AcquireResult.Held) refused).remainingTtlMillis()).isBetween(1L, 10_000L);
            assertThat(admin.get(keys.lockKey("marked"))).isEqualTo("holder-2+waited");
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "marked", "waiter", 10_000)).as("asked again").isInstanceOf(AcquireResult.Held.class);
            assertThat(admin.get(keys.lockKey("marked"))).as("marked once").isEqualTo("holder-2+waited");

            assertThat(backend.renew(List.of(new LeaseRenewal("marked", "holder-2", 30_000)))).containsExactly(RenewalResult.RENEWED);
            assertThat(admin.pttl(keys.lockKey("marked"))).isBetween(10_001L, 30_000L);
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "marked", "holder-2", 30_000)).as("the owner's repeated acquisition")
                    .isInstanceOf(AcquireResult.Acquired.class);
            HandOffResult passed = backend.handOff("marked", "holder-2", "holder-3", 0);
            assertThat(passed).isInstanceOf(HandOffResult.Passed.class);
            assertThat(((HandOffResult.Passed) passed).othersWaiting()).as("the waiter's mark, seen by the hand-off").isTrue();
            assertThat(backend.issueFencingToken(LockKind.EXCLUSIVE, "marked", "holder-3").orElseThrow())
                    .as("the token asked for after it, with the key marked").isGreaterThan(token);
            assertThat(admin.get(keys.lockKey("marked"))).as("the mark carried to the next owner").isEqualTo("holder-3+waited");
            assertThat(backend.release(LockKind.EXCLUSIVE, "marked", "waiter", 0)).as("not the waiter's to release").isEqualTo(ReleaseResult.NOT_OWNER);

            CountDownLatch released = new CountDownLatch(1);
            try (Subscription subscription = backend.capabilities().releaseNotices().orElseThrow().subscribe("marked", released::countDown)) {
                assertThat(subscription.awaitActive(BOUND)).isTrue();
                long last = ((HandOffResult.Passed) passed).fencingToken();
                assertThat(backend.release(LockKind.EXCLUSIVE, "marked", "holder-3", last)).isEqualTo(ReleaseResult.RELEASED);
                assertThat(released.await(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("the marked release's notice").isTrue();
                assertThat(backend.release(LockKind.EXCLUSIVE, "marked", "holder-3", last)).as("repeated").isEqualTo(ReleaseResult.ALREADY_FREE);
            }
            assertThat(admin.exists(keys.lockKey("marked"))).isFalse();
        }
    }

    @Test
    void aWaiterInAnotherJvmIsWokenByTheReleaseNotTheHoldersLease() throws Exception {
        // The holder's lease (60 s) outlasts the waiter's wait (20 s): only a release notice can let the waiter in.
        LockRequest longLease = LockRequest.builder("contended").leaseTime(Duration.ofSeconds(60))
                .waitTime(Duration.ofSeconds(20)).build();
        ExecutorService otherJvmThread = Executors.newSingleThreadExecutor();
        try (RedisClient holderClient = RedisTestSupport.client(redis.server());
             RedisLockBackend holderStore = RedisLockBackend.builder(holderClient).build();
             LockManager holderJvm = LockManager.builder(holderStore).build();
             RedisClient waiterClient = RedisTestSupport.client(redis.server());
             RedisLockBackend waiterStore = RedisLockBackend.builder(waiterClient).build();
             LockManager waiterJvm = LockManager.builder(waiterStore).build();
             Jedis admin = redis.server().admin()) {
            for (int round = 0; round < 5; round++) {
                LockHandle held = holderJvm.acquire(longLease);
                Future<Long> waiter = otherJvmThread.submit(() -> {
                    try (LockHandle lock = waiterJvm.acquire(longLease)) {
                        return lock.fencingToken();
                    }
                });
                long deadline = System.nanoTime() + BOUND.toNanos();
                while (!admin.get(keys.lockKey("contended")).endsWith("+waited")) {
                    assertThat(System.nanoTime()).as("the waiter was refused").isLessThan(deadline);
                    Thread.sleep(2);
                }
                long holderToken = held.fencingToken();
                held.close();
                assertThat(waiter.get(BOUND.toMillis(), TimeUnit.MILLISECONDS)).as("round " + round).isGreaterThan(holderToken);
            }
        } finally {
            otherJvmThread.shutdownNow();
        }
    }

    @Test
    void aFairHolderWhoseQueueStillHasWaitersIsMarkedSoItsReleaseWakesThem() throws Exception {
        String key = "fair-queued";
        try (RedisClient client = RedisTestSupport.client(redis.server()); RedisLockBackend backend = RedisLockBackend.builder(client).build();
             Jedis admin = redis.server().admin()) {
            long first = acquiredToken(backend.tryAcquire(LockKind.FAIR, key, "holder", 10_000));
            assertThat(backend.tryAcquire(LockKind.FAIR, key, "first-waiter", 10_000)).isInstanceOf(AcquireResult.Held.class);
            assertThat(backend.tryAcquire(LockKind.FAIR, key, "second-waiter", 10_000)).isInstanceOf(AcquireResult.Held.class);
            assertThat(backend.release(LockKind.FAIR, key, "holder", first)).isEqualTo(ReleaseResult.RELEASED);
            // Both were woken; the second asks first and is refused with the key free: it is not its turn, and there
            // is no holder to mark. The first then takes the key.
            assertThat(backend.tryAcquire(LockKind.FAIR, key, "second-waiter", 10_000)).isInstanceOf(AcquireResult.Held.class);
            long next = acquiredToken(backend.tryAcquire(LockKind.FAIR, key, "first-waiter", 10_000));
            assertThat(next).isGreaterThan(first);
            assertThat(admin.get(keys.lockKey(key))).as("the new holder's value, with a waiter still queued")
                    .isEqualTo("first-waiter+waited");
            long retried = acquiredToken(backend.tryAcquire(LockKind.FAIR, key, "first-waiter", 10_000));
            assertThat(retried).as("the holder's repeated acquisition").isGreaterThan(next);
            assertThat(backend.renew(List.of(new LeaseRenewal(key, "first-waiter", 20_000, LockKind.FAIR))))
                    .containsExactly(RenewalResult.RENEWED);

            CountDownLatch released = new CountDownLatch(1);
            try (Subscription subscription = backend.capabilities().releaseNotices().orElseThrow().subscribe(key, released::countDown)) {
                assertThat(subscription.awaitActive(BOUND)).isTrue();
                assertThat(backend.release(LockKind.FAIR, key, "first-waiter", retried)).isEqualTo(ReleaseResult.RELEASED);
                assertThat(released.await(BOUND.toMillis(), TimeUnit.MILLISECONDS))
                        .as("the notice the queued second waiter sleeps on").isTrue();
            }
            long last = acquiredToken(backend.tryAcquire(LockKind.FAIR, key, "second-waiter", 10_000));
            assertThat(last).isGreaterThan(retried);
            assertThat(admin.get(keys.lockKey(key))).as("nobody queued any more: an uncontended value").isEqualTo("second-waiter");
            assertThat(backend.release(LockKind.FAIR, key, "second-waiter", last)).isEqualTo(ReleaseResult.RELEASED);
        }
    }

    @Test
    void aFairKeyLoopedOnByThreeJvmsNeverSitsFreeWhileOneWaits() throws Exception {
        // A waiter re-checks every third of the fair-waiter timeout: 10 s here, so a waiter that sleeps through its turn
        // leaves the key free for seconds, far beyond any scheduling delay of a loaded machine.
        Duration fairWaiterTimeout = Duration.ofSeconds(30);
        Duration longestAllowedGap = Duration.ofMillis(500);
        int acquisitions = 1000;
        LockRequest fair = LockRequest.builder("fair-loop").kind(LockKind.FAIR).leaseTime(Duration.ofSeconds(30))
                .waitTime(Duration.ofSeconds(60)).build();
        AtomicInteger taken = new AtomicInteger();
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicLong lastReleaseAt = new AtomicLong();
        AtomicLong longestGapNanos = new AtomicLong();
        List<AutoCloseable> resources = new ArrayList<>();
        ExecutorService jvms = Executors.newFixedThreadPool(3);
        try {
            List<Future<?>> loops = new ArrayList<>();
            for (int jvm = 0; jvm < 3; jvm++) {
                RedisClient client = RedisTestSupport.client(redis.server());
                resources.add(client);
                RedisLockBackend store = RedisLockBackend.builder(client).fairWaiterTimeout(fairWaiterTimeout).build();
                resources.add(store);
                LockManager locks = LockManager.builder(store).build();
                resources.add(locks);
                loops.add(jvms.submit(() -> {
                    while (taken.get() < acquisitions && longestGapNanos.get() <= longestAllowedGap.toNanos()) {
                        try (LockHandle lock = locks.acquire(fair)) {
                            long acquiredAt = System.nanoTime();
                            if (holders.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            long releasedBefore = lastReleaseAt.get();
                            if (releasedBefore != 0) {
                                longestGapNanos.accumulateAndGet(acquiredAt - releasedBefore, Math::max);
                            }
                            taken.incrementAndGet();
                            holders.decrementAndGet();
                            lastReleaseAt.set(System.nanoTime());
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> loop : loops) {
                loop.get(120, TimeUnit.SECONDS);
            }
        } finally {
            jvms.shutdownNow();
            Collections.reverse(resources);
            RedisTestSupport.closeAll(resources.toArray(new AutoCloseable[0]));
        }
        assertThat(overlaps).as("holders overlapping").hasValue(0);
        assertThat(Duration.ofNanos(longestGapNanos.get()))
                .as("longest time the key sat free between a release and the next acquisition (%d acquisitions)", taken.get())
                .isLessThan(longestAllowedGap);
    }

    @Test
    void aWaiterWhoseMarkWasLostInAFailoverGetsTheKeySoonAfterTheRelease() throws Exception {
        // The holder's lease (60 s) outlasts the waiter's wait (20 s): a waiter that sleeps until the lease's end fails.
        LockRequest longLease = LockRequest.builder("mark-lost").leaseTime(Duration.ofSeconds(60))
                .waitTime(Duration.ofSeconds(20)).build();
        String lockKey = keys.lockKey("mark-lost");
        ExecutorService otherJvmThread = Executors.newSingleThreadExecutor();
        try (RedisClient holderClient = RedisTestSupport.client(redis.server());
             RedisLockBackend holderStore = RedisLockBackend.builder(holderClient).build();
             LockManager holderJvm = LockManager.builder(holderStore).build();
             RedisClient waiterClient = RedisTestSupport.client(redis.server());
             RedisLockBackend waiterStore = RedisLockBackend.builder(waiterClient).build();
             LockManager waiterJvm = LockManager.builder(waiterStore).build();
             Jedis admin = redis.server().admin()) {
            LockHandle held = holderJvm.acquire(longLease);
            long scriptsBefore = scriptCalls();
            Future<Long> waiter = otherJvmThread.submit(() -> {
                Optional<LockHandle> lock = waiterJvm.tryAcquire(longLease);
                lock.ifPresent(LockHandle::close);
                return lock.isPresent() ? System.nanoTime() : 0L;
            });
            // Refused, subscribed, refused again: the waiter now sleeps on the notice its mark promises.
            RedisTestSupport.await("the waiter's two refused attempts", BOUND,
                    () -> scriptCalls() - scriptsBefore >= 2 && admin.get(lockKey).endsWith("+waited"));
            String marked = admin.get(lockKey);
            // What a promoted replica that never received the mark holds: the holder's value without it, same expiry.
            admin.set(lockKey, marked.substring(0, marked.length() - "+waited".length()), SetParams.setParams().keepTtl());

            long releasedAt = System.nanoTime();
            held.close();
            long acquiredAt = waiter.get(BOUND.toMillis() + longLease.waitTime().toMillis(), TimeUnit.MILLISECONDS);
            assertThat(acquiredAt).as("the waiter got the key within its 20 s wait, the holder's lease being 60 s").isNotZero();
            assertThat(Duration.ofNanos(acquiredAt - releasedAt)).as("from the unnoticed release to the waiter's acquisition")
                    .isLessThan(Duration.ofSeconds(5));
        } finally {
            otherJvmThread.shutdownNow();
        }
    }

    private static long scriptCalls() {
        return redis.server().commandCalls().getOrDefault("evalsha", 0L);
    }

    private static long acquiredToken(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }
}
