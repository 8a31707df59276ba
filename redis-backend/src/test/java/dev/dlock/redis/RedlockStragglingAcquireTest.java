package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;

import org.apache.commons.pool2.impl.GenericObjectPoolConfig;

import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Issue 55, item 6: a Redlock acquire granted by a quorum leaves a slow master's acquire running; a command of the
 * holder that moves the key away (release, shortening, extension) reaches that master first, and the straggling
 * acquire lands after it. The key must not stay held there for nobody. Three real masters, each behind a
 * {@link RespProxy}: master 2's acquire is held at its proxy (and master 1's until master 2's is held, so that master
 * 2's call surely started before the quorum answered); the holder's command is held at master 1 until it ran on
 * master 2 (so it surely got there first); then the held acquire is let through and lands.
 */
class RedlockStragglingAcquireTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private static final String ACQUIRE_SHA1 = LuaScript.load("acquire.lua", "fencing.lua", "notices.lua").sha1();
    private static final String RELEASE_SHA1 = LuaScript.load("release.lua", "notices.lua").sha1();
    /** The master whose acquire straggles. */
    private static final int SLOW = 2;
    /** The master stopped afterwards: the one fault Redlock on three masters tolerates. */
    private static final int STOPPED = 0;
    private static final long LEASE_MILLIS = 30_000;
    /** RedlockBackend's call threads per master. */
    private static final int CALL_THREADS_PER_MASTER = 16;
    /** Well below the 30 s lease: only a release sent after the straggler landed frees the key this soon. */
    private static final Duration FREE_WITHIN = Duration.ofSeconds(5);
    /** Generous for a loaded 2-core machine; every wait on it ends at its event. */
    private static final Duration EVENT_WITHIN = Duration.ofSeconds(15);
    /** Longer than any hold below: the held acquire answers with the key, not with a timeout. */
    private static final JedisClientConfig PATIENT = DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(1_000).socketTimeoutMillis(20_000).build();
    /**
     * For the lost reply: the slow master's client gives up on the held acquire after 5 s, far more than the test's
     * steps before it take (the holder's release).
     */
    private static final JedisClientConfig IMPATIENT = DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis(1_000).socketTimeoutMillis(5_000).build();

    private static final List<RedisServerProcess> masters = new ArrayList<>();
    private static final List<RespProxy> proxies = new ArrayList<>();
    private final List<UnifiedJedis> clients = new ArrayList<>();

    @BeforeAll
    static void start() {
        try {
            for (int i = 0; i < 3; i++) {
                RedisServerProcess master = RedisServerProcess.start();
                masters.add(master);
                proxies.add(RespProxy.start(master));
            }
        } catch (RuntimeException | Error e) {
            stop();
            throw e;
        }
    }

    @AfterAll
    static void stop() {
        proxies.forEach(RespProxy::close);
        masters.forEach(RedisServerProcess::close);
    }

    @AfterEach
    void heal() {
        clients.forEach(UnifiedJedis::close);
        clients.clear();
        for (int i = 0; i < masters.size(); i++) {
            proxies.get(i).passThrough();
            try (Jedis admin = masters.get(i).admin()) {
                admin.flushAll();
            }
        }
    }

    @Test
    void aReleaseThatOvertakesTheStragglingAcquireLeavesTheKeyFree() throws Exception {
        String key = "straggler-release";
        try (RedlockBackend backend = backend(PATIENT)) {
            Straggling<AcquireResult> acquired = acquireWithStraggler(key,
                    () -> backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", LEASE_MILLIS));
            assertThat(acquired.result()).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(overtake(key, () -> backend.release(LockKind.EXCLUSIVE, key, "holder", 0))).isEqualTo(ReleaseResult.RELEASED);
            land(acquired.hold(), key);
            assertFreeOnTheSlowMaster(key, "holder");
            assertAnotherTakesItWithOneMasterStopped(backend, key);
        }
    }

    @Test
    void aLockManagerReleaseThatOvertakesTheStragglingAcquireLeavesTheKeyFree() throws Exception {
        String key = "straggler-manager";
        try (RedlockBackend backend = backend(PATIENT);
             LockManager locks = LockManager.builder(backend).build()) {
            Straggling<LockHandle> acquired = acquireWithStraggler(key, () -> locks.acquire(
                    LockRequest.builder(key).waitTime(Duration.ofSeconds(10)).leaseTime(Duration.ofMillis(LEASE_MILLIS)).build()));
            String owner = ownerOn(STOPPED, key);
            overtake(key, () -> {
                acquired.result().close();
                return null;
            });
            land(acquired.hold(), key);
            assertFreeOnTheSlowMaster(key, owner);
            assertAnotherTakesItWithOneMasterStopped(backend, key);
        }
    }

    /** The engine's release before lockAtLeastFor ran out: a shortening that hands the key to a retired owner. */
    @Test
    void aShorteningThatOvertakesTheStragglingAcquireLeavesTheKeyFree() throws Exception {
        String key = "straggler-shorten";
        try (RedlockBackend backend = backend(PATIENT);
             LockManager locks = LockManager.builder(backend).build()) {
            Straggling<LockHandle> acquired = acquireWithStraggler(key, () -> locks.acquire(LockRequest.builder(key)
                    .waitTime(Duration.ofSeconds(10)).leaseTime(Duration.ofMillis(LEASE_MILLIS))
                    .lockAtLeastFor(Duration.ofSeconds(5)).build()));
            String owner = ownerOn(STOPPED, key);
            overtake(key, () -> {
                acquired.result().close();
                return null;
            });
            assertThat(ownerOn(1, key)).as("master 1 keeps the key for a retired owner until lockAtLeastFor ends")
                    .isNotNull().isNotEqualTo(owner);
            land(acquired.hold(), key);
            assertFreeOnTheSlowMaster(key, owner);
            assertAnotherTakesItWithOneMasterStopped(backend, key);
        }
    }

    @Test
    void anExtensionThatOvertakesTheStragglingAcquireLeavesTheSlowMasterFree() throws Exception {
        String key = "straggler-extend";
        try (RedlockBackend backend = backend(PATIENT)) {
            Straggling<AcquireResult> acquired = acquireWithStraggler(key,
                    () -> backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", LEASE_MILLIS));
            assertThat(acquired.result()).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(overtake(key, () -> backend.extend(LockKind.EXCLUSIVE, key, "holder", "next-term", LEASE_MILLIS)))
                    .isEqualTo(RenewalResult.RENEWED);
            land(acquired.hold(), key);
            assertFreeOnTheSlowMaster(key, "holder");
            assertThat(ownerOn(STOPPED, key)).as("the new term is left alone").isEqualTo("next-term");
            assertThat(backend.release(LockKind.EXCLUSIVE, key, "next-term", 0)).isEqualTo(ReleaseResult.RELEASED);
            assertAnotherTakesItWithOneMasterStopped(backend, key);
        }
    }

    /**
     * The straggler's reply is lost (its client times out), the single-Redis backend's own release after the lost reply
     * fails, and the command lands later: the owner is released there again, until a release answered after it.
     */
    @Test
    void aStragglingAcquireWhoseReplyIsLostIsReleasedAgainAfterItLands() throws Exception {
        String key = "straggler-lost-reply";
        Predicate<RespProxy.Command> releaseOfKey = RespProxy.Command.runsScript(RELEASE_SHA1)
                .and(command -> command.hasArgument(KEYS.lockKey(key)));
        try (RedlockBackend backend = backend(IMPATIENT)) {
            Straggling<AcquireResult> acquired = acquireWithStraggler(key,
                    () -> backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", LEASE_MILLIS));
            assertThat(acquired.result()).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(overtake(key, () -> backend.release(LockKind.EXCLUSIVE, key, "holder", 0))).isEqualTo(ReleaseResult.RELEASED);
            // In place well before the straggler's client times out (5 s after it sent the held acquire).
            RespProxy.Rule refused = proxies.get(SLOW).failCommands(releaseOfKey, "ERR refused by the test proxy");
            boolean releasedAgain;
            try {
                // First the single-Redis backend's release after the lost reply; then, with the fix, Redlock's own.
                releasedAgain = awaitQuietly(EVENT_WITHIN, () -> refused.matched() >= 2);
                land(acquired.hold(), key);
            } finally {
                refused.remove();
            }
            assertFreeOnTheSlowMaster(key, "holder");
            assertThat(releasedAgain).as("releases of the owner on master %d after the straggler's reply was lost: %d",
                    SLOW, refused.matched()).isTrue();
            assertAnotherTakesItWithOneMasterStopped(backend, key);
        }
    }

    /**
     * A release whose call to a master had not started when a quorum answered (every call thread of that master busy)
     * still runs there once a thread is free; skipped, it left the key there for a whole lease for nobody.
     */
    @Test
    void aReleaseQueuedBehindABusyMasterStillRunsThere() throws Exception {
        String key = "queued-release";
        try (RedlockBackend backend = backend(PATIENT)) {
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", LEASE_MILLIS)).isInstanceOf(AcquireResult.Acquired.class);
            RedisTestSupport.await("every master holds the key", EVENT_WITHIN,
                    () -> "holder".equals(ownerOn(0, key)) && "holder".equals(ownerOn(1, key)) && "holder".equals(ownerOn(SLOW, key)));
            // Every call thread of the slow master waits in a straggling acquire of a key of its own: the first ones held
            // at its proxy, the rest queued behind them in its client's lanes (ScriptCoalescer).
            for (int i = 0; i < CALL_THREADS_PER_MASTER; i++) {
                String busy = "busy-" + i;
                int busyBefore = i;
                acquireWithStraggler(busy, () -> busyCallThreads(SLOW) > busyBefore,
                        () -> backend.tryAcquire(LockKind.EXCLUSIVE, busy, "busy", LEASE_MILLIS));
            }
            assertThat(busyCallThreads(SLOW)).as("busy call threads of master %d", SLOW).isEqualTo(CALL_THREADS_PER_MASTER);
            assertThat(backend.release(LockKind.EXCLUSIVE, key, "holder", 0)).isEqualTo(ReleaseResult.RELEASED);
            assertThat(ownerOn(SLOW, key)).as("master %d, whose release waits for a call thread", SLOW).isEqualTo("holder");
            proxies.get(SLOW).passThrough();
            assertFreeOnTheSlowMaster(key, "holder", "its call threads were free again");
            assertAnotherTakesItWithOneMasterStopped(backend, key);
        }
    }

    /** An acquisition's outcome, and the hold on its straggling command to the slow master (still held). */
    private record Straggling<T>(T result, RespProxy.Rule hold) {
    }

    /**
     * Runs {@code acquire} in another thread with the acquire commands for {@code key} held at masters 1 and 2; once
     * both are held, lets master 1's through, so that masters 0 and 1 grant while master 2's call is surely in flight.
     */
    private static <T> Straggling<T> acquireWithStraggler(String key, Supplier<T> acquire) throws Exception {
        return acquireWithStraggler(key, null, acquire);
    }

    /**
     * {@link #acquireWithStraggler(String, Supplier)}; with {@code started} not null, master 1's acquire is let through
     * once it holds instead of once master 2's acquire is held at its proxy.
     */
    private static <T> Straggling<T> acquireWithStraggler(String key, BooleanSupplier started, Supplier<T> acquire)
            throws Exception {
        Predicate<RespProxy.Command> acquireOfKey = RespProxy.Command.runsScript(ACQUIRE_SHA1)
                .and(command -> command.hasArgument(KEYS.lockKey(key)));
        RespProxy.Rule quorumMaker = proxies.get(1).holdCommand(acquireOfKey);
        RespProxy.Rule straggler = proxies.get(SLOW).holdCommand(acquireOfKey);
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread acquiring = new Thread(() -> {
            try {
                result.complete(acquire.get());
            } catch (Throwable e) {
                result.completeExceptionally(e);
            }
        }, "straggling-acquirer");
        acquiring.setDaemon(true);
        acquiring.start();
        if (started == null) {
            assertThat(straggler.awaitHeld(EVENT_WITHIN)).as("master %d's acquire of %s reached its proxy", SLOW, key).isTrue();
        } else {
            RedisTestSupport.await("master " + SLOW + "'s acquire of " + key + " started", EVENT_WITHIN, started);
        }
        assertThat(quorumMaker.awaitHeld(EVENT_WITHIN)).as("master 1's acquire reached its proxy").isTrue();
        quorumMaker.release();
        T value = result.get(EVENT_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(ownerOn(SLOW, key)).as("master %d before its held acquire is let through", SLOW).isNull();
        return new Straggling<>(value, straggler);
    }

    /**
     * Runs the holder's {@code command} with its command for {@code key} held at master 1 until master 2 ran it: the
     * holder's command surely reaches the slow master before the straggling acquire, which is still held there.
     */
    private static <T> T overtake(String key, Supplier<T> command) throws Exception {
        Map<String, Long> before = masters.get(SLOW).commandCalls();
        RespProxy.Rule held = proxies.get(1).holdCommand(scriptNaming(key));
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            Thread sending = new Thread(() -> {
                try {
                    result.complete(command.get());
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
            }, "overtaking-holder");
            sending.setDaemon(true);
            sending.start();
            RedisTestSupport.await("the holder's command ran on master " + SLOW, EVENT_WITHIN, () -> {
                Map<String, Long> since = masters.get(SLOW).commandCallsSince(before);
                return since.getOrDefault("evalsha", 0L) + since.getOrDefault("eval", 0L) > 0;
            });
        } finally {
            held.remove();
        }
        return result.get(EVENT_WITHIN.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static Predicate<RespProxy.Command> scriptNaming(String key) {
        return command -> command.name().startsWith("EVAL") && command.hasArgument(KEYS.lockKey(key));
    }

    private static boolean awaitQuietly(Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            sleep(20);
        }
        return true;
    }

    /** Lets the held acquire through and waits until it ran (it wrote the key's fencing counter there). */
    private static void land(RespProxy.Rule straggler, String key) {
        straggler.release();
        RedisTestSupport.await("the straggling acquire ran on master " + SLOW, EVENT_WITHIN, () -> {
            try (Jedis admin = masters.get(SLOW).admin()) {
                return admin.exists(KEYS.counterKey(key));
            }
        });
    }

    private static void assertFreeOnTheSlowMaster(String key, String owner) {
        assertFreeOnTheSlowMaster(key, owner, "the straggling acquire landed");
    }

    private static void assertFreeOnTheSlowMaster(String key, String owner, String after) {
        long deadline = System.nanoTime() + FREE_WITHIN.toNanos();
        try (Jedis admin = masters.get(SLOW).admin()) {
            while (admin.exists(KEYS.lockKey(key))) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("master " + SLOW + " still holds '" + key + "' for " + admin.get(KEYS.lockKey(key))
                            + " (PTTL " + admin.pttl(KEYS.lockKey(key)) + " ms) " + FREE_WITHIN.toSeconds()
                            + " s after " + after + "; its holder " + owner + " had moved the key away before");
                }
                sleep(20);
            }
        }
    }

    /** With master 0 stopped (connections refused), another owner takes the key on masters 1 and 2. */
    private static void assertAnotherTakesItWithOneMasterStopped(RedlockBackend backend, String key) {
        proxies.get(STOPPED).cutConnections();
        long deadline = System.nanoTime() + EVENT_WITHIN.toNanos();
        AcquireResult taken;
        // Retried: a shortened lease keeps the key on master 1 until lockAtLeastFor ends.
        while (!((taken = backend.tryAcquire(LockKind.EXCLUSIVE, key, "another", LEASE_MILLIS)) instanceof AcquireResult.Acquired)
                && System.nanoTime() - deadline < 0) {
            sleep(100);
        }
        assertThat(taken).as("another owner's acquire of '%s' with master %d stopped (master %d holds it for %s)",
                key, STOPPED, SLOW, ownerOn(SLOW, key)).isInstanceOf(AcquireResult.Acquired.class);
    }

    /** How many of Redlock's call threads for master {@code master} are running a call now. */
    private static int busyCallThreads(int master) {
        int busy = 0;
        for (Map.Entry<Thread, StackTraceElement[]> thread : Thread.getAllStackTraces().entrySet()) {
            if (!thread.getKey().getName().startsWith("dlock-redlock-" + master + "-")) {
                continue;
            }
            for (StackTraceElement frame : thread.getValue()) {
                if (frame.getClassName().equals(RedlockFanOut.class.getName()) && frame.getMethodName().equals("run")) {
                    busy++;
                    break;
                }
            }
        }
        return busy;
    }

    private static String ownerOn(int master, String key) {
        try (Jedis admin = masters.get(master).admin()) {
            return admin.get(KEYS.lockKey(key));
        }
    }

    /** A Redlock backend over the three proxies, with fresh clients; {@code slowMasterConfig} for master 2's. */
    private RedlockBackend backend(JedisClientConfig slowMasterConfig) {
        for (int i = 0; i < proxies.size(); i++) {
            // Room for a connection per call thread of the backend's master, and more.
            GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
            pool.setMaxTotal(32);
            clients.add(RedisClient.builder().hostAndPort(proxies.get(i).host(), proxies.get(i).port())
                    .clientConfig(i == SLOW ? slowMasterConfig : PATIENT).poolConfig(pool).build());
        }
        RedlockBackend backend = RedlockBackend.builder(clients).build();
        try {
            // Loads the scripts on every master: a held EVALSHA must run when let through, not answer NOSCRIPT.
            AcquireResult warmUp = backend.tryAcquire(LockKind.EXCLUSIVE, "warm-up", "warm-up", LEASE_MILLIS);
            assertThat(warmUp).isInstanceOf(AcquireResult.Acquired.class);
            backend.release(LockKind.EXCLUSIVE, "warm-up", "warm-up", 0);
            RedisTestSupport.await("the warm-up released on every master", EVENT_WITHIN,
                    () -> ownerOn(0, "warm-up") == null && ownerOn(1, "warm-up") == null && ownerOn(2, "warm-up") == null);
            return backend;
        } catch (RuntimeException | Error e) {
            backend.close();
            throw e;
        }
    }

    private static void sleep(long millis) {
        try {
            TimeUnit.MILLISECONDS.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
