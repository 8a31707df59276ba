package dev.dlock.redis;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.redis.RedisServerExtension;
import dev.dlock.testkit.redis.RespProxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * A holder that says it reads its fencing token ({@link LockRequest.Builder#readsFencingToken}) has Redis issue it with
 * the acquisition, and with a local hand-off to it: a fenced hold (acquire, read the token, release) is two round trips,
 * as an unfenced one, where the token issued at the first read makes three. The token is as strong as one issued on
 * request: issued only to the owner that holds the key (a refused acquisition and a hand-off of a lost lease issue
 * none), above every earlier token, and the previous local holder's late commands miss the next holder's lease. The
 * round trips are the commands the clients send through a proxy: a single caller sends each alone.
 */
class FencedHoldTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();
    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    @Test
    void aFencedHoldIsTwoRoundTripsAndAHoldThatDidNotSaySoGetsItsTokenAtTheFirstReadInAThird() {
        try (RespProxy proxy = RespProxy.start(redis.server());
             RedisClient client = RedisTestSupport.client(proxy.host(), proxy.port(), 5_000);
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).build()) {
            // Every script loaded, and the pooled connection open, before counting.
            hold(locks, "warm-up", true);
            hold(locks, "warm-up", false);

            long before = proxy.commandCount();
            long fenced = hold(locks, "fenced", true);
            assertThat(proxy.commandCount() - before).as("round trips of a fenced hold: acquire with its token, release")
                    .isEqualTo(2);

            before = proxy.commandCount();
            long onRequest = hold(locks, "fenced", false);
            assertThat(proxy.commandCount() - before).as("round trips of a hold that reads a token it did not ask for")
                    .isEqualTo(3);
            assertThat(onRequest).as("the next holder's token, issued on request").isGreaterThan(fenced);
            assertThat(hold(locks, "fenced", true)).as("and the one after, issued with the acquisition").isGreaterThan(onRequest);
        }
    }

    @Test
    void aHandOffToAWaiterThatReadsItsTokenIssuesAHigherOneInTheSameRoundTrip() throws Exception {
        try (RespProxy proxy = RespProxy.start(redis.server());
             RedisClient client = RedisTestSupport.client(proxy.host(), proxy.port(), 5_000);
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).build();
             Jedis admin = redis.server().admin()) {
            hold(locks, "warm-up", true);
            LockHandle first = locks.acquire(fenced("passed").waitTime(Duration.ZERO).build());
            long firstToken = first.fencingToken();

            CompletableFuture<Long> nextToken = new CompletableFuture<>();
            CountDownLatch release = new CountDownLatch(1);
            Thread next = new Thread(() -> {
                try (LockHandle lock = locks.acquire(fenced("passed").waitTime(Duration.ofSeconds(30)).build())) {
                    nextToken.complete(lock.fencingToken());
                    release.await(30, TimeUnit.SECONDS);
                } catch (Throwable e) {
                    nextToken.completeExceptionally(e);
                }
            }, "next-holder");
            next.setDaemon(true);
            next.start();
            RedisTestSupport.await("the next holder to queue for the key's turn", Duration.ofSeconds(10),
                    () -> waitsForTheTurn(next));

            try {
                long before = proxy.commandCount();
                first.close();
                long token = nextToken.get(30, TimeUnit.SECONDS);
                assertThat(proxy.commandCount() - before).as("round trips from the release to the next holder's token: the hand-off")
                        .isEqualTo(1);
                assertThat(token).as("the next holder's token").isGreaterThan(firstToken);
                assertThat(admin.get(KEYS.counterKey("passed"))).as("the counter").isEqualTo(Long.toString(token));
            } finally {
                release.countDown();
                next.join(10_000);
            }
            assertThat(admin.exists(KEYS.lockKey("passed"))).as("the key is free at the end").isFalse();
        }
    }

    @Test
    void aFencedAcquisitionIssuesItsTokenOnlyWhenItTakesTheKey() {
        try (Store store = new Store()) {
            String counter = KEYS.counterKey("taken");
            long token = acquired(store.backend.tryAcquire(LockKind.EXCLUSIVE, "taken", "a", 30_000, true));
            assertThat(token).as("the token of a fenced acquisition").isPositive();
            assertThat(store.admin.get(counter)).isEqualTo(Long.toString(token));
            assertThat(store.admin.get(KEYS.lockKey("taken"))).as("the key names the owner").isEqualTo("a");

            assertThat(store.backend.tryAcquire(LockKind.EXCLUSIVE, "taken", "b", 30_000, true)).as("another owner's fenced attempt")
                    .isInstanceOf(AcquireResult.Held.class);
            assertThat(store.admin.get(counter)).as("the counter after a refused attempt").isEqualTo(Long.toString(token));

            long again = acquired(store.backend.tryAcquire(LockKind.EXCLUSIVE, "taken", "a", 30_000, true));
            assertThat(again).as("the same acquisition repeated (a client retry): still the owner's, a larger token")
                    .isGreaterThan(token);
            assertThat(store.backend.release(LockKind.EXCLUSIVE, "taken", "a", again)).isEqualTo(ReleaseResult.RELEASED);
        }
    }

    /**
     * A hand-off issuing the next holder's token rewrites the owner first: the previous holder's late issuance, renewal
     * and release all miss. A hand-off of a lease that was lost (run out, or another owner took the key) passes nothing
     * on and issues no token; a repeated hand-off changes nothing and brings no token.
     */
    @Test
    void aFencedHandOffIssuesTheNextHoldersTokenOnlyForALeaseStillHeld() {
        try (Store store = new Store()) {
            String counter = KEYS.counterKey("handed");
            long first = acquired(store.backend.tryAcquire(LockKind.EXCLUSIVE, "handed", "jvm-a", 30_000, true));
            long next = passed(store.backend.handOff("handed", "jvm-a", "jvm-a-2", 0, true));
            assertThat(next).as("the next holder's token, issued by the hand-off").isGreaterThan(first);
            assertThat(store.admin.get(counter)).isEqualTo(Long.toString(next));
            assertThat(store.admin.get(KEYS.lockKey("handed"))).as("the key names the next holder").isEqualTo("jvm-a-2");

            assertThat(store.backend.issueFencingToken(LockKind.EXCLUSIVE, "handed", "jvm-a")).as("the previous holder's late issuance")
                    .isEmpty();
            assertThat(store.backend.renew(List.of(new LeaseRenewal("handed", "jvm-a", 900, LockKind.EXCLUSIVE))))
                    .as("the previous holder's late renewal").containsExactly(RenewalResult.TAKEN);
            assertThat(store.backend.release(LockKind.EXCLUSIVE, "handed", "jvm-a", first)).as("the previous holder's late release")
                    .isEqualTo(ReleaseResult.NOT_OWNER);
            assertThat(store.admin.pttl(KEYS.lockKey("handed"))).as("the next holder's lease, untouched").isGreaterThan(20_000L);

            assertThat(passed(store.backend.handOff("handed", "jvm-a", "jvm-a-2", 0, true))).as("the same hand-off repeated")
                    .isEqualTo(AcquireResult.Acquired.TOKEN_ON_REQUEST);
            assertThat(store.admin.get(counter)).as("the counter after the repeat").isEqualTo(Long.toString(next));

            // The next holder's lease is lost: another owner took the key after it ran out.
            store.admin.del(KEYS.lockKey("handed"));
            long theirs = acquired(store.backend.tryAcquire(LockKind.EXCLUSIVE, "handed", "jvm-b", 30_000, true));
            assertThat(store.backend.handOff("handed", "jvm-a-2", "jvm-a-3", 0, true)).as("a hand-off of the lost lease")
                    .isEqualTo(HandOffResult.NOT_HELD);
            assertThat(store.admin.get(counter)).as("no token issued for the lost lease").isEqualTo(Long.toString(theirs));
            assertThat(store.admin.get(KEYS.lockKey("handed"))).isEqualTo("jvm-b");

            // A lease that ran out with nobody taking the key: still nothing passed on, nothing issued.
            store.admin.del(KEYS.lockKey("handed"));
            assertThat(store.backend.handOff("handed", "jvm-b", "jvm-b-2", 0, true)).isEqualTo(HandOffResult.NOT_HELD);
            assertThat(store.admin.get(counter)).isEqualTo(Long.toString(theirs));
            assertThat(store.admin.exists(KEYS.lockKey("handed"))).isFalse();
            assertThat(store.backend.handOff("never-taken", "jvm-b", "jvm-b-2", 0, true)).isEqualTo(HandOffResult.NOT_HELD);
            assertThat(store.admin.exists(KEYS.counterKey("never-taken"))).as("a counter for a key never taken").isFalse();
        }
    }

    /** The backend over the test's Redis, straight (no proxy), and an admin connection to look at its keys. */
    private static final class Store implements AutoCloseable {
        final RedisClient client = RedisTestSupport.client(redis.server());
        final RedisLockBackend backend = RedisLockBackend.builder(client).build();
        final Jedis admin = redis.server().admin();

        @Override
        public void close() {
            admin.close();
            backend.close();
            client.close();
        }
    }

    /** A hold of {@code key} that reads its token, said up front ({@code fenced}) or not; the token. */
    private static long hold(LockManager locks, String key, boolean fenced) {
        try (LockHandle lock = locks.acquire(LockRequest.builder(key).readsFencingToken(fenced).waitTime(Duration.ZERO).build())) {
            long token = lock.fencingToken();
            assertThat(lock.fencingToken()).as("the token read again").isEqualTo(token);
            return token;
        }
    }

    private static LockRequest.Builder fenced(String key) {
        return LockRequest.builder(key).readsFencingToken(true);
    }

    private static long acquired(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }

    private static long passed(HandOffResult result) {
        assertThat(result).isInstanceOf(HandOffResult.Passed.class);
        return ((HandOffResult.Passed) result).fencingToken();
    }

    /** Whether {@code thread} waits in the engine for this JVM's turn on a key. */
    private static boolean waitsForTheTurn(Thread thread) {
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals("dev.dlock.core.LocalTurn") && frame.getMethodName().equals("enter")) {
                return thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING;
            }
        }
        return false;
    }
}
