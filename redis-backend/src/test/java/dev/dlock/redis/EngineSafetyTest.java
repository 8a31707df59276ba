package dev.dlock.redis;

import dev.dlock.core.LockKind;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import dev.dlock.testkit.RecordingBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine's safety promises where only a real Redis can show them: a stalled server (SIGSTOP)
 * ends "held" at the lease's expiry, a release after a quick restart or against a dead server tells
 * the holder, and a repeated release of the real script is a normal release. The store-independent
 * engine behaviours are tested on the in-memory store in dlock-core ({@code LockManagerTest},
 * {@code WatchdogTest}).
 */
class EngineSafetyTest {

    /** How long a test waits for the engine to react to a stall: far beyond the 2 s lease, for a loaded machine. */
    private static final Duration STALL_BOUND = Duration.ofSeconds(30);

    private static RedisServerProcess redis;
    private static RedisClient client;
    private final List<AutoCloseable> closeAfterTest = new ArrayList<>();

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
        client = RedisTestSupport.client(redis);
    }

    @AfterAll
    static void stopRedis() throws Exception {
        RedisTestSupport.closeAll(client, redis);
    }

    @AfterEach
    void closeResources() throws Exception {
        // The shared server runs again before anything else, so that no later test meets a stopped Redis.
        if (redis.isSuspended()) {
            redis.resume();
        }
        if (!redis.isRunning()) {
            redis.restart();
        }
        for (int i = closeAfterTest.size() - 1; i >= 0; i--) {
            closeAfterTest.get(i).close();
        }
    }

    private LockManager manager(RedisClient over, Duration lease) {
        RedisLockBackend backend = RedisLockBackend.builder(over).build();
        return manager(new RecordingBackend(backend), lease, backend);
    }

    private LockManager manager(RecordingBackend recording, Duration lease, AutoCloseable backend, LockListener... listeners) {
        LockManager.Builder builder = LockManager.builder(recording).leaseTime(lease);
        for (LockListener listener : listeners) {
            builder.listener(listener);
        }
        LockManager locks = builder.build();
        closeAfterTest.add(backend);
        closeAfterTest.add(locks);
        return locks;
    }

    /** A server of the test's own, which it may kill or restart; stopped after the test. */
    private RedisServerProcess ownServer() {
        RedisServerProcess own = RedisServerProcess.start();
        closeAfterTest.add(own);
        return own;
    }

    /** A client of {@code server}, closed after the test (before the server). */
    private RedisClient clientOf(RedisServerProcess server) {
        RedisClient created = RedisTestSupport.client(server);
        closeAfterTest.add(created);
        return created;
    }

    private static String freshKey(String name) {
        return name + ":" + System.nanoTime();
    }

    // ------------------------------------------------------------------ the watchdog

    /**
     * Item 8: with the store stalled longer than the lease, the holder stops being told "held" when
     * the lease may have run out — while the stalled renewal is still waiting — and the stall is
     * visible on the manager. Redis stays stopped until the test saw both, whatever the machine's
     * load, and runs again when the block ends, also when an assertion failed.
     */
    @Test
    void aStalledStoreEndsHeldAtTheLeasesExpiryNotWhenTheStalledCallReturns() throws Exception {
        // A client that waits out the stall, as one with a generous socket timeout does: its call
        // cannot return while Redis is stopped, so whatever the holder learns meanwhile is the engine's.
        RedisClient patient = RedisClient.builder().hostAndPort(redis.host(), redis.port())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(120_000).build()).build();
        closeAfterTest.add(patient);
        // A lease a loaded machine can renew in time (a 300 ms one ran out there before its first renewal).
        Duration lease = Duration.ofSeconds(2);
        LockManager locks = manager(patient, lease);
        String key = freshKey("stalled");
        LockHandle handle = locks.acquire(key, Duration.ZERO);
        await("a first renewal", STALL_BOUND, () -> locks.admin().watchdogRenewCallCount() > 0);

        try (RedisServerProcess.Stall stall = redis.stall()) {
            // Every command Redis ran, it ran before this moment.
            long stalledAt = System.nanoTime();
            await("the lease to read as lost while Redis is stopped", STALL_BOUND, () -> !handle.isHeld());
            assertThat(handle.state()).isEqualTo(LockState.LOST);
            await("the stalled renewal call to be reported", STALL_BOUND, () -> locks.admin().watchdogStalledCalls() == 1);
            assertThat(redis.isSuspended()).as("Redis is still stopped when the holder is told").isTrue();
            // The engine's estimate runs from the last renewal's send, Redis's expiry from when it ran: resumed
            // earlier, Redis may still hold the key and rightly take the stalled renewal (seen under load).
            await("the key's lease to have run out in Redis", STALL_BOUND,
                    () -> System.nanoTime() - stalledAt > lease.plusMillis(50).toNanos());
        }

        await("the stall to clear", STALL_BOUND, () -> locks.admin().watchdogStalledCalls() == 0);
        assertThat(locks.admin().watchdogStallCount()).isGreaterThanOrEqualTo(1);
        assertThatThrownBy(handle::close).isInstanceOf(LockLostException.class);
        try (LockHandle again = locks.acquire(key, Duration.ofSeconds(5))) {
            assertThat(again.isHeld()).isTrue();
        }
    }

    // ------------------------------------------------------------------ release

    /**
     * Item 11: Redis restarts without persistence while the holder works, another application takes
     * the key from the empty server, and the holder's release first meets a pooled connection the
     * restart closed. The holder must be told its lease was lost, not returned to as if all went well.
     */
    @Test
    void aReleaseAfterAQuickRestartTellsTheHolderItsLeaseWasTaken() throws Exception {
        RedisServerProcess own = ownServer();
        RedisClient holderClient = clientOf(own);
        RedisClient otherClient = clientOf(own);
        LockManager holder = manager(holderClient, Duration.ofSeconds(30));
        LockManager otherApp = manager(otherClient, Duration.ofSeconds(30));
        String key = freshKey("restart");

        LockHandle handle = holder.acquire(key, Duration.ZERO);
        own.restart();
        LockHandle taken = RedisTestSupport.retrying(Duration.ofSeconds(5), () -> otherApp.acquire(key, Duration.ZERO));
        assertThatThrownBy(handle::close).as("the holder's release after its key was taken")
                .isInstanceOf(LockLostException.class)
                .hasMessageContaining(key);
        assertThat(taken.isHeld()).isTrue();
        taken.close();
    }

    /**
     * Issue 37, item 2: read leases and permits, watched and fixed, are held when Redis restarts without persistence;
     * another application takes each key (a writer, the one permit) from the empty server; each holder's release,
     * inside its lease, tells it the lease was lost (LockLostException and one onLeaseLost), never a clean release.
     * The leases are long, so that no renewal finds the loss first: the release alone must tell it.
     */
    @Test
    void aReadLeaseOrPermitTheRestartLostIsReportedLostAtReleaseWatchedOrFixed() throws Exception {
        RedisServerProcess own = ownServer();
        RedisClient holderClient = clientOf(own);
        RedisClient otherClient = clientOf(own);
        List<String> lost = new CopyOnWriteArrayList<>();
        LockListener losses = onLeaseLost((key, reason) -> lost.add(key));
        RedisLockBackend holderBackend = RedisLockBackend.builder(holderClient).build();
        LockManager holder = manager(new RecordingBackend(holderBackend), Duration.ofSeconds(30), holderBackend, losses);
        LockManager otherApp = manager(otherClient, Duration.ofSeconds(30));
        LockKind onePermit = LockKind.permits(1);
        List<LockKind[]> pairs = List.of(new LockKind[] {LockKind.READ, LockKind.WRITE}, new LockKind[] {onePermit, onePermit});
        List<String> keys = new ArrayList<>();
        List<LockHandle> held = new ArrayList<>();
        for (LockKind[] pair : pairs) {
            for (boolean watched : new boolean[] {true, false}) {
                String key = freshKey("restart-" + pair[0].mode() + (watched ? "-watched" : "-fixed"));
                LockRequest.Builder asked = LockRequest.builder(key).kind(pair[0]).waitTime(Duration.ZERO);
                held.add(holder.acquire(watched ? asked.build() : asked.leaseTime(Duration.ofSeconds(30)).build()));
                keys.add(key);
            }
        }
        own.restart();
        List<LockHandle> taken = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            LockRequest asked = LockRequest.builder(keys.get(i)).kind(pairs.get(i / 2)[1]).waitTime(Duration.ZERO).build();
            taken.add(RedisTestSupport.retrying(Duration.ofSeconds(5), () -> otherApp.acquire(asked)));
        }
        for (int i = 0; i < keys.size(); i++) {
            String key = keys.get(i);
            assertThat(held.get(i).isHeld()).as("%s: the holder, within its lease, unaware", key).isTrue();
            assertThatExceptionOfType(LockLostException.class).as("%s: the release of the share the restart lost", key)
                    .isThrownBy(held.get(i)::close).withMessageContaining(key);
            assertThat(lost).as("%s: onLeaseLost", key).containsOnlyOnce(key);
            assertThat(taken.get(i).isHeld()).as("%s: the other application's lock", key).isTrue();
            taken.get(i).close();
        }
    }

    /** Item 11: when the store stays unreachable, the release says that its outcome is unknown. */
    @Test
    void aReleaseThatCannotReachTheStoreSaysTheOutcomeIsUnknown() {
        RedisServerProcess own = RedisServerProcess.start();
        closeAfterTest.add(own);
        RedisClient holderClient = RedisTestSupport.client(own);
        closeAfterTest.add(holderClient);
        LockManager holder = manager(holderClient, Duration.ofSeconds(30));
        String key = freshKey("unreachable");
        LockHandle handle = holder.acquire(key, Duration.ZERO);
        own.kill();
        assertThatThrownBy(handle::close)
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining(key)
                .hasMessageContaining("outcome is unknown");
        assertThat(handle.isHeld()).isFalse();
    }

    /** A release whose first reply is lost but which did delete the key is a normal release, not a lost lease. */
    @Test
    void aRepeatedReleaseOfALiveLeaseIsNotReportedLost() {
        RedisLockBackend backend = RedisLockBackend.builder(client).build();
        RecordingBackend recording = new RecordingBackend(backend);
        LockManager locks = manager(recording, Duration.ofSeconds(30), backend);
        String key = freshKey("repeated-release");
        LockHandle handle = locks.acquire(key, Duration.ZERO);
        // The store already freed the key for this owner (as a first attempt whose reply was lost would have).
        assertThat(backend.release(LockKind.EXCLUSIVE, key, ownerOf(key), handle.fencingToken())).isEqualTo(dev.dlock.core.spi.ReleaseResult.RELEASED);
        handle.close();
        AtomicBoolean free = new AtomicBoolean();
        try (LockHandle again = locks.acquire(key, Duration.ZERO)) {
            free.set(again.isHeld());
        }
        assertThat(free).isTrue();
    }

    // ------------------------------------------------------------------ fencing tokens issued on request

    /**
     * A holder whose lease ran out in Redis and was taken by another application never gets a token when it asks
     * for it late: the store refuses it, nothing is written to the key's counter, and the holder learns its lease was
     * lost, once, as a lost lease is reported (the release says so again, without a second report).
     */
    @Test
    void aHolderWhoseLeaseRanOutAndWasTakenGetsNoTokenAndIsToldItsLeaseWasLost() {
        List<String> lost = new CopyOnWriteArrayList<>();
        LockListener losses = onLeaseLost((key, reason) -> lost.add(reason));
        RedisLockBackend backend = RedisLockBackend.builder(client).build();
        LockManager holder = manager(new RecordingBackend(backend), Duration.ofSeconds(30), backend, losses);
        LockManager otherApp = manager(client, Duration.ofSeconds(30));
        String key = freshKey("overtaken");
        String counter = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX).counterKey(key);
        LockHandle handle = holder.acquire(LockRequest.builder(key).leaseTime(Duration.ofMillis(200)).waitTime(Duration.ZERO).build());

        try (LockHandle taken = otherApp.acquire(key, Duration.ofSeconds(5)); Jedis admin = redis.admin()) {
            assertThat(admin.exists(counter)).as("a counter before anyone asked for a token").isFalse();
            assertThatThrownBy(handle::fencingToken).isInstanceOf(LockLostException.class).hasMessageContaining(key);
            assertThat(admin.exists(counter)).as("a counter after the refused ask").isFalse();
            assertThat(lost).as("loss reports").hasSize(1);
            assertThat(taken.fencingToken()).as("the new holder's token").isPositive();
        }
        assertThatThrownBy(handle::close).isInstanceOf(LockLostException.class);
        assertThat(lost).as("loss reports after the release").hasSize(1);
    }

    /** A listener that hands each lost lease's key and reason to {@code report}. */
    private static LockListener onLeaseLost(BiConsumer<String, String> report) {
        return new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                report.accept(key, reason);
            }
        };
    }

    private static String ownerOf(String key) {
        try (Jedis admin = redis.admin()) {
            return admin.get(new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX).lockKey(key));
        }
    }
}
