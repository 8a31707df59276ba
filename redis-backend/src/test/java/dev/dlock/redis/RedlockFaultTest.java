package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ThreadInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockState;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.ThreadWaits;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Redlock on five real masters, each behind a {@link RespProxy}, under faults: raises that fail,
 * replies that never come, stalled (SIGSTOP) masters, and interrupts. Clients use a 5 s socket
 * timeout; the backend its default 5 s operation timeout.
 */
class RedlockFaultTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private static final String RAISE_SHA1 = LuaScript.load("raise_fence.lua").sha1();
    private static final Duration FREE_WITHIN = Duration.ofSeconds(15);
    /**
     * "Did not wait for the stalled masters": half their 5 s timeouts, so that a loaded machine's slow threads do not
     * pass for a wait (a bound of 1 s could be missed there).
     */
    private static final Duration WITHOUT_WAITING = Duration.ofMillis(2_500);
    /** A socket timeout as long as the operation timeout: only the backend decides when to stop waiting for a master. */
    private static final JedisClientConfig CLIENT_CONFIG = DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(1_000).socketTimeoutMillis(5_000).build();

    private static final List<RedisServerProcess> masters = new ArrayList<>();
    private static final List<RespProxy> proxies = new ArrayList<>();
    private static final List<UnifiedJedis> clients = new ArrayList<>();

    @BeforeAll
    static void start() {
        for (int i = 0; i < 5; i++) {
            RedisServerProcess master = RedisServerProcess.start();
            masters.add(master);
            proxies.add(RespProxy.start(master));
        }
    }

    @AfterAll
    static void stop() {
        proxies.forEach(RespProxy::close);
        masters.forEach(RedisServerProcess::close);
    }

    /** Fresh clients per test: a pooled connection that a fault cut must not fail the next test. */
    @BeforeEach
    void connect() {
        for (RespProxy proxy : proxies) {
            clients.add(RedisClient.builder().hostAndPort(proxy.host(), proxy.port()).clientConfig(CLIENT_CONFIG).build());
        }
    }

    @AfterEach
    void healEverything() {
        clients.forEach(UnifiedJedis::close);
        clients.clear();
        for (int i = 0; i < masters.size(); i++) {
            if (masters.get(i).isSuspended()) {
                masters.get(i).resume();
            }
            proxies.get(i).passThrough();
            try (Jedis admin = masters.get(i).admin()) {
                admin.flushAll();
            }
        }
    }

    @Test
    void aTokenThatCannotBeMadeSafeOnEnoughMastersIsNeverHandedOut() {
        String key = "raise-fails";
        // Master 0's counter ran far ahead (its clock jumped, or it issued many tokens): the quorum's token comes from it.
        try (Jedis admin = masters.get(0).admin()) {
            List<String> time = admin.time();
            long micros = Long.parseLong(time.get(0)) * 1_000_000 + Long.parseLong(time.get(1));
            admin.set(KEYS.counterKey(key), Long.toString(micros + 1_000_000_000L));
        }
        // Master 1 takes the raise; masters 2, 3, 4 refuse it.
        List<RespProxy.Rule> refusals = new ArrayList<>();
        for (int i = 2; i < 5; i++) {
            refusals.add(proxies.get(i).failCommands(RespProxy.Command.runsScript(RAISE_SHA1), "ERR raise refused by the test proxy"));
        }
        List<Long> handedOut = new ArrayList<>();
        Throwable firstFailure = null;
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            try {
                AcquireResult first = backend.tryAcquire(LockKind.EXCLUSIVE, key, "first", 10_000);
                if (first instanceof AcquireResult.Acquired acquired) {
                    handedOut.add(acquired.fencingToken());
                    backend.release(LockKind.EXCLUSIVE, key, "first", acquired.fencingToken());
                }
            } catch (LockBackendException e) {
                firstFailure = e;
            }
            for (int i = 0; i < 5; i++) {
                awaitNotHeldBy(i, key, "first");
            }
            // The high master and the raised one go away; the next quorum is the three unraised masters.
            proxies.get(0).cutConnections();
            proxies.get(1).cutConnections();
            refusals.forEach(RespProxy.Rule::remove);
            AcquireResult second = backend.tryAcquire(LockKind.EXCLUSIVE, key, "second", 10_000);
            assertThat(second).isInstanceOf(AcquireResult.Acquired.class);
            handedOut.add(((AcquireResult.Acquired) second).fencingToken());
        }
        assertThat(refusals.stream().mapToLong(RespProxy.Rule::matched).sum()).as("raises refused").isPositive();
        for (int i = 1; i < handedOut.size(); i++) {
            assertThat(handedOut.get(i)).as("token %d handed out (every token handed out: %s)", i, handedOut)
                    .isGreaterThan(handedOut.get(i - 1));
        }
        assertThat(firstFailure).as("the unsafe token was refused").isInstanceOf(LockBackendException.class)
                .hasMessageContaining("fencing");
        for (int i = 2; i < 5; i++) {
            try (Jedis admin = masters.get(i).admin()) {
                assertThat(admin.get(KEYS.lockKey(key))).as("master %d: only the second owner holds the key", i).isEqualTo("second");
            }
        }
    }

    @Test
    void anInterruptedAcquireWhoseRepliesAreHeldReleasesEveryMasterAndKeepsTheInterrupt() throws Exception {
        String key = "interrupted-held";
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            // With replies held, neither a NOSCRIPT answer nor a new connection's handshake would come
            // back: load the scripts and leave an open idle connection in every client's pool first.
            AcquireResult warmUp = backend.tryAcquire(LockKind.EXCLUSIVE, "warm-up", "warm-up", 10_000);
            assertThat(warmUp).isInstanceOf(AcquireResult.Acquired.class);
            backend.release(LockKind.EXCLUSIVE, "warm-up", "warm-up", ((AcquireResult.Acquired) warmUp).fencingToken());
            clients.forEach(UnifiedJedis::ping);
            for (int i = 0; i < 3; i++) {
                proxies.get(i).holdReplies();
            }
            Outcome outcome = interruptWhileAcquiring(backend, key, () -> everyMasterHolds(key, "interrupted"));
            for (int i = 0; i < 3; i++) {
                proxies.get(i).releaseReplies();
            }
            awaitFreeOnEveryMaster(key);
            outcome.assertNotAcquiredAndInterrupted();
        }
    }

    @Test
    void anInterruptedAcquireWithStalledMastersReleasesEveryMasterOnceTheyResume() throws Exception {
        String key = "interrupted-stalled";
        for (int i = 0; i < 3; i++) {
            masters.get(i).suspend();
        }
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            Outcome outcome = interruptWhileAcquiring(backend, key,
                    () -> holds(3, key, "interrupted") && holds(4, key, "interrupted"));
            for (int i = 0; i < 3; i++) {
                masters.get(i).resume();
            }
            awaitFreeOnEveryMaster(key);
            outcome.assertNotAcquiredAndInterrupted();
        }
    }

    /**
     * A caller waiting for the stalled masters waits on a {@code java.util.concurrent} condition, holding no monitor: a
     * monitor wait pins a virtual thread to its carrier on JDK 21 to 23, here for up to the operation timeout.
     */
    @Test
    void aCallerWaitingForStalledMastersHoldsNoMonitor() throws Exception {
        String key = "waiting-stalled";
        for (int i = 0; i < 3; i++) {
            masters.get(i).suspend();
        }
        AtomicReference<ThreadInfo> waiting = new AtomicReference<>();
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            Outcome outcome = interruptWhileAcquiring(backend, key, () -> holds(3, key, "interrupted") && holds(4, key, "interrupted")
                    && waitingForTheQuorum("interrupted-acquirer", waiting));
            for (int i = 0; i < 3; i++) {
                masters.get(i).resume();
            }
            awaitFreeOnEveryMaster(key);
            outcome.assertNotAcquiredAndInterrupted();
        }
        ThreadWaits.assertWaitsHoldingNoMonitor(waiting.get());
    }

    /** True once the thread named {@code name} waits in the fan-out for the masters' answers; its state into {@code info}. */
    private static boolean waitingForTheQuorum(String name, AtomicReference<ThreadInfo> info) {
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (!thread.getName().equals(name)) {
                continue;
            }
            ThreadInfo state = ThreadWaits.info(thread);
            if (!ThreadWaits.isTimedWaiting(state)) {
                return false;
            }
            for (StackTraceElement frame : state.getStackTrace()) {
                if (frame.getClassName().equals(RedlockFanOut.class.getName()) && frame.getMethodName().equals("await")) {
                    info.set(state);
                    return true;
                }
            }
        }
        return false;
    }

    /** Through the engine: an interrupted wait on Redlock ends as INTERRUPTED, keeps the flag, and leaves nothing locked. */
    @Test
    void anInterruptedLockManagerAcquireOnRedlockEndsInterruptedAndLeavesNothingLocked() throws Exception {
        String key = "interrupted-manager";
        for (int i = 0; i < 3; i++) {
            masters.get(i).suspend();
        }
        try (RedlockBackend backend = RedlockBackend.builder(clients).build();
             LockManager locks = LockManager.builder(backend).build()) {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            CompletableFuture<Boolean> interruptedAtExit = new CompletableFuture<>();
            Thread acquiring = new Thread(() -> {
                try (LockHandle ignored = locks.acquire(key, Duration.ofSeconds(30))) {
                    failure.set(new AssertionError("acquired while 3 of 5 masters were stalled"));
                } catch (RuntimeException e) {
                    failure.set(e);
                }
                interruptedAtExit.complete(Thread.currentThread().isInterrupted());
            }, "interrupted-manager");
            acquiring.setDaemon(true);
            acquiring.start();
            RedisTestSupport.await("the acquire reached the healthy masters", Duration.ofSeconds(10),
                    () -> lockedOn(3, key) && lockedOn(4, key));
            acquiring.interrupt();
            assertThat(interruptedAtExit.get(10, TimeUnit.SECONDS)).as("the interrupt flag is kept").isTrue();
            assertThat(failure.get()).isInstanceOf(LockNotAcquiredException.class);
            assertThat(((LockNotAcquiredException) failure.get()).reason()).isEqualTo(LockNotAcquiredException.Reason.INTERRUPTED);
            for (int i = 0; i < 3; i++) {
                masters.get(i).resume();
            }
            awaitFreeOnEveryMaster(key);
        }
    }

    private static boolean lockedOn(int master, String key) {
        try (Jedis admin = masters.get(master).admin()) {
            return admin.exists(KEYS.lockKey(key));
        }
    }

    @Test
    void aFencingRaiseThatOutlastsTheValidityIsNotHandedOut() {
        String key = "slow-raise";
        for (RespProxy proxy : proxies) {
            proxy.delayCommands(RespProxy.Command.runsScript(RAISE_SHA1), Duration.ofSeconds(2));
        }
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            long start = System.nanoTime();
            AcquireResult result = backend.tryAcquire(LockKind.EXCLUSIVE, key, "short-lease", 1_000);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertThat(result).as("a 1 s lease acquired in %s ms is not handed out", took.toMillis())
                    .isInstanceOf(AcquireResult.Held.class);
        }
        awaitFreeOnEveryMaster(key);
    }

    @Test
    void withOneMasterStalledRenewReleaseAndPingReturnAtQuorum() {
        String key = "one-stalled";
        try (RedlockBackend backend = RedlockBackend.builder(clients).build()) {
            AcquireResult acquired = backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", 10_000);
            assertThat(acquired).isInstanceOf(AcquireResult.Acquired.class);
            long token = ((AcquireResult.Acquired) acquired).fencingToken();
            masters.get(0).suspend();
            List<LeaseRenewal> batch = List.of(new LeaseRenewal(key, "holder", 10_000));

            assertThat(timed(() -> backend.renew(batch), "renew")).containsExactly(RenewalResult.RENEWED);
            timed(backend::ping, "ping");
            assertThat(timed(() -> backend.release(LockKind.EXCLUSIVE, key, "holder", token), "release")).isEqualTo(ReleaseResult.RELEASED);
            assertThat(timed(() -> backend.renew(batch), "renew after the release")).containsExactly(RenewalResult.EXPIRED);
        }
    }

    /**
     * Issue 37: a renewal is RENEWED once a quorum renewed it; the masters outside that quorum renew when their
     * commands land. A refusal meanwhile answers with the least TTL among the masters that answered it, which may be
     * one whose renewal has not landed: a lower bound, not the lease the quorum holds. What the renewal promises is
     * read on the quorum ({@link RedisTestSupport#leaseOnAQuorum}), as the store-level contract now does.
     */
    @Test
    void aRenewalIsOnAQuorumAtOnceAndOnTheSlowMastersWhenTheirCommandsLand() throws Exception {
        String key = "renewed-at-quorum";
        long firstLease = 10_000;
        long renewedLease = 30_000;
        try (RedlockBackend store = RedlockBackend.builder(clients).build()) {
            assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, "holder", firstLease)).isInstanceOf(AcquireResult.Acquired.class);
            // The acquisition answers at quorum too: the delay below must hit the renewal, not a late acquisition.
            RedisTestSupport.await("the acquisition on every master", FREE_WITHIN,
                    () -> java.util.stream.IntStream.range(0, 5).allMatch(i -> holds(i, key, "holder")));
            // Masters 0 and 1 get the renewal late (a slow link): the other three are the quorum that renews at once.
            List<RespProxy.Rule> slow = List.of(
                    proxies.get(0).delayCommands(command -> true, Duration.ofSeconds(3)),
                    proxies.get(1).delayCommands(command -> true, Duration.ofSeconds(3)));
            assertThat(store.renew(List.of(new LeaseRenewal(key, "holder", renewedLease, LockKind.EXCLUSIVE))))
                    .containsExactly(RenewalResult.RENEWED);
            assertThat(RedisTestSupport.leaseOnAQuorum(masters, key)).as("the lease a quorum of masters holds right after RENEWED")
                    .isGreaterThan(firstLease);
            for (int i = 0; i < 2; i++) {
                assertThat(pttl(i, key)).as("master %d, whose renewal is still on its way", i).isPositive().isLessThanOrEqualTo(firstLease);
            }

            // A refusal decided by masters 0, 1 and 2 (the replies of 3 and 4 held back): what the contract used to read.
            List<UnifiedJedis> readerClients = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                readerClients.add(i < 3 ? RedisClient.builder().hostAndPort(masters.get(i).host(), masters.get(i).port())
                        .clientConfig(CLIENT_CONFIG).build() : clients.get(i));
            }
            try (RedlockBackend reader = RedlockBackend.builder(readerClients).build()) {
                proxies.get(3).holdReplies();
                proxies.get(4).holdReplies();
                AcquireResult refused;
                try {
                    refused = reader.tryAcquire(LockKind.EXCLUSIVE, key, "other", renewedLease);
                } finally {
                    proxies.get(3).releaseReplies();
                    proxies.get(4).releaseReplies();
                }
                assertThat(refused).isInstanceOf(AcquireResult.Held.class);
                assertThat(((AcquireResult.Held) refused).remainingTtlMillis())
                        .as("a refusal's TTL: the least among masters 0, 1 and 2, a lower bound").isLessThanOrEqualTo(firstLease);
            } finally {
                readerClients.subList(0, 3).forEach(UnifiedJedis::close);
            }

            RedisTestSupport.await("the renewal to land on the slow masters", FREE_WITHIN,
                    () -> pttl(0, key) > firstLease && pttl(1, key) > firstLease);
            assertThat(slow).allMatch(rule -> rule.matched() > 0);
        }
    }

    private static long pttl(int master, String key) {
        try (Jedis admin = masters.get(master).admin()) {
            return admin.pttl(KEYS.lockKey(key));
        }
    }

    @Test
    void aWatchdogLeaseOutlivesAStalledMaster() throws Exception {
        String key = "watched-stalled";
        // A lease a loaded machine can renew in time: with 600 ms, a busy machine lost it whether or not a master stalled.
        Duration lease = Duration.ofSeconds(2);
        AtomicInteger lost = new AtomicInteger();
        LockListener countLost = new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                lost.incrementAndGet();
            }
        };
        try (RedlockBackend backend = RedlockBackend.builder(clients).build();
             RedlockBackend intruderBackend = RedlockBackend.builder(clients).build();
             LockManager locks = LockManager.builder(backend).leaseTime(lease).listener(countLost).build()) {
            LockHandle handle = locks.acquire(key, Duration.ofSeconds(10));
            masters.get(0).suspend();
            long heldUntil = System.nanoTime() + lease.multipliedBy(2).toNanos();
            while (System.nanoTime() < heldUntil) {
                assertThat(lost).as("leases lost while master 0 is stalled").hasValue(0);
                assertThat(handle.state()).isEqualTo(LockState.HELD);
                TimeUnit.MILLISECONDS.sleep(50);
            }
            assertThat(intruderBackend.tryAcquire(LockKind.EXCLUSIVE, key, "intruder", 10_000)).as("the key is still held in the store")
                    .isInstanceOf(AcquireResult.Held.class);
            assertThat(lost).as("leases lost while master 0 is stalled").hasValue(0);
            assertThat(handle.isHeld()).isTrue();
            handle.close();
        }
    }

    /** Runs tryAcquire in a thread, interrupts it once {@code ready} holds, and reports how it ended. */
    private static Outcome interruptWhileAcquiring(RedlockBackend backend, String key, BooleanSupplier ready)
            throws Exception {
        AtomicReference<Object> result = new AtomicReference<>();
        CompletableFuture<Boolean> interruptedAtExit = new CompletableFuture<>();
        Thread acquiring = new Thread(() -> {
            try {
                result.set(backend.tryAcquire(LockKind.EXCLUSIVE, key, "interrupted", 30_000));
            } catch (RuntimeException e) {
                result.set(e);
            }
            interruptedAtExit.complete(Thread.currentThread().isInterrupted());
        }, "interrupted-acquirer");
        acquiring.setDaemon(true);
        acquiring.start();
        RedisTestSupport.await("the acquire reached the masters", Duration.ofSeconds(10), ready);
        assertThat(interruptedAtExit).as("still waiting for the stalled masters").isNotDone();
        long interruptedAt = System.nanoTime();
        acquiring.interrupt();
        boolean flag = interruptedAtExit.get(10, TimeUnit.SECONDS);
        Duration toReturn = Duration.ofNanos(System.nanoTime() - interruptedAt);
        return new Outcome(result.get(), flag, toReturn);
    }

    /** How an interrupted tryAcquire ended. */
    private record Outcome(Object result, boolean interruptFlag, Duration toReturn) {

        void assertNotAcquiredAndInterrupted() {
            assertThat(result).as("the interrupted acquire's outcome").isEqualTo(new AcquireResult.Held(-1));
            assertThat(interruptFlag).as("the interrupt flag is kept").isTrue();
            assertThat(toReturn).as("returned without waiting for the stalled masters").isLessThan(WITHOUT_WAITING);
        }
    }

    private static <T> T timed(Supplier<T> call, String what) {
        long start = System.nanoTime();
        T value = call.get();
        Duration took = Duration.ofNanos(System.nanoTime() - start);
        assertThat(took).as("%s with one of five masters stalled (operation and socket timeout 5 s)", what)
                .isLessThan(WITHOUT_WAITING);
        return value;
    }

    private static boolean everyMasterHolds(String key, String owner) {
        for (int i = 0; i < masters.size(); i++) {
            if (!holds(i, key, owner)) {
                return false;
            }
        }
        return true;
    }

    private static boolean holds(int master, String key, String owner) {
        try (Jedis admin = masters.get(master).admin()) {
            return owner.equals(admin.get(KEYS.lockKey(key)));
        }
    }

    private static void awaitNotHeldBy(int master, String key, String owner) {
        RedisTestSupport.await("master " + master + " no longer holds '" + key + "' for " + owner, Duration.ofSeconds(10),
                () -> !holds(master, key, owner));
    }

    private static void awaitFreeOnEveryMaster(String key) {
        long deadline = System.nanoTime() + FREE_WITHIN.toNanos();
        for (int i = 0; i < masters.size(); i++) {
            try (Jedis admin = masters.get(i).admin()) {
                long pttl;
                while ((pttl = admin.pttl(KEYS.lockKey(key))) != -2) {
                    assertThat(System.nanoTime()).as("master %d still holds '%s' with PTTL %d ms after %s s",
                            i, key, pttl, FREE_WITHIN.toSeconds()).isLessThan(deadline);
                    sleepBriefly();
                }
            }
        }
    }

    private static void sleepBriefly() {
        try {
            TimeUnit.MILLISECONDS.sleep(20);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
