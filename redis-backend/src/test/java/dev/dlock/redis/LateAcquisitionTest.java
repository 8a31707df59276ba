package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

import org.junit.jupiter.api.Test;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.RespProxy;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * An acquisition whose command is held in the network past the client's socket timeout fails with
 * {@link LockBackendException}; its best-effort release finds nothing, and then the command reaches Redis and takes
 * the key for an owner no JVM has. Another JVM waiting for the key must get it within about one renewal period (a
 * third of the lease) after that, not after the whole lease. The order is forced by the proxy: the command is held
 * until the acquisition has failed, then let through.
 */
class LateAcquisitionTest {

    /** The lease the failed acquisition asked for: its owner is released again every 3 s. */
    private static final Duration LEASE = Duration.ofSeconds(9);
    /** One renewal period (3 s) and as much again for a loaded machine; the old behaviour took the whole 9 s. */
    private static final Duration FREED_WITHIN = Duration.ofSeconds(6);
    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    @Test
    void aSetNxThatLandsAfterItsAcquisitionFailedIsFreedWithinOneRenewalPeriod() throws Exception {
        String key = "late-set-nx";
        lateCommandIsFreed(LockKind.EXCLUSIVE, key, command -> command.name().equals("SET") && command.hasArgument("NX"));
    }

    @Test
    void aFairAcquireScriptThatLandsAfterItsAcquisitionFailedIsFreedWithinOneRenewalPeriod() throws Exception {
        String key = "late-fair";
        // The first script naming the key's fair queue is the acquisition's fair_acquire.lua (the withdrawal comes after).
        lateCommandIsFreed(LockKind.FAIR, key, command -> command.name().startsWith("EVAL")
                && command.hasArgument(KEYS.fairQueueKey(key)));
    }

    /**
     * The same shape when the store is reachable for the grant but not for giving it back: the abort condition holds
     * once the key is taken, and the release of the grant fails. The key must not stay taken for nobody either.
     */
    @Test
    void aGrantGivenBackWhileTheReleaseFailsIsFreedWithinOneRenewalPeriod() throws Exception {
        String key = "given-back";
        onRedis(jvms -> {
            RespProxy.Rule releases = jvms.proxy().failCommands(command -> command.name().startsWith("EVAL")
                    && command.hasArgument(KEYS.lastReleaseKey(LockKind.EXCLUSIVE, key)), "ERR refused by the test proxy");
            AtomicInteger checks = new AtomicInteger();
            // False before the store call, true once the key is taken: the acquisition gives its grant back.
            LockRequest request = LockRequest.builder(key).leaseTime(LEASE).waitTime(Duration.ZERO)
                    .abortIf(() -> checks.incrementAndGet() > 1).build();

            assertThat(jvms.failing().tryAcquire(request)).as("aborted after the grant").isEmpty();
            assertThat(releases.matched()).as("the grant's release was refused").isPositive();
            assertThat(jvms.admin().exists(KEYS.lockKey(key))).as("the grant stayed in Redis").isTrue();
            releases.remove();

            anotherJvmGetsItSoon(jvms, LockKind.EXCLUSIVE, key, System.nanoTime(), "its release failed");
        });
    }

    private static void lateCommandIsFreed(LockKind kind, String key, Predicate<RespProxy.Command> acquisitionCommand)
            throws Exception {
        onRedis(jvms -> {
            // Loads the kind's scripts into Redis: a held EVALSHA of a script Redis does not know yet would fail there.
            jvms.failing().acquire(LockRequest.builder("warm-up").kind(kind).leaseTime(LEASE).waitTime(Duration.ZERO).build())
                    .close();
            RespProxy.Rule hold = jvms.proxy().holdCommand(acquisitionCommand);
            LockRequest request = LockRequest.builder(key).kind(kind).leaseTime(LEASE).waitTime(Duration.ZERO).build();

            assertThatThrownBy(() -> jvms.failing().acquire(request))
                    .as("the acquisition whose command is held past the socket timeout").isInstanceOf(LockBackendException.class);
            assertThat(hold.awaitHeld(Duration.ofSeconds(10))).as("the acquisition's command was held").isTrue();
            assertThat(jvms.admin().exists(KEYS.lockKey(key))).as("the command has not reached Redis when its acquisition failed")
                    .isFalse();

            hold.release();
            RedisTestSupport.await("the held command took the key in Redis", Duration.ofSeconds(10),
                    () -> jvms.admin().exists(KEYS.lockKey(key)));
            long landedAt = System.nanoTime();
            String orphan = jvms.admin().get(KEYS.lockKey(key));

            anotherJvmGetsItSoon(jvms, kind, key, landedAt, "the late command landed (taking it for nobody: " + orphan + ")");
        });
    }

    /** Another JVM asks for {@code key} with a wait longer than the lease: it must get it within {@link #FREED_WITHIN}. */
    private static void anotherJvmGetsItSoon(TwoJvms jvms, LockKind kind, String key, long sinceNanos, String since) {
        LockRequest waiting = LockRequest.builder(key).kind(kind).leaseTime(LEASE).waitTime(LEASE.plusSeconds(5)).build();
        try (LockHandle taken = jvms.other().acquire(waiting)) {
            Duration after = Duration.ofNanos(System.nanoTime() - sinceNanos);
            assertThat(after).as("another JVM got key '%s' %s ms after %s, with a %s ms lease", key, after.toMillis(), since,
                    LEASE.toMillis()).isLessThan(FREED_WITHIN);
            assertThat(taken.isHeld()).isTrue();
        }
    }

    /** A Redis server of the test; a JVM that reaches it through the proxy, whose acquisitions fail; another that does not. */
    private record TwoJvms(RespProxy proxy, LockManager failing, LockManager other, Jedis admin) {
    }

    private interface Scenario {
        void run(TwoJvms jvms) throws Exception;
    }

    /** Runs {@code scenario} on a Redis server of its own, and stops everything afterwards, also when it fails. */
    private static void onRedis(Scenario scenario) throws Exception {
        try (RedisServerProcess server = RedisServerProcess.start();
             RespProxy proxy = RespProxy.start(server);
             RedisClient slowClient = RedisTestSupport.client(proxy.host(), proxy.port(), RedisTestSupport.CLIENT_TIMEOUT_MILLIS);
             RedisLockBackend slowBackend = RedisLockBackend.builder(slowClient).build();
             LockManager failing = LockManager.builder(slowBackend).build();
             RedisClient client = RedisTestSupport.client(server);
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager otherJvm = LockManager.builder(backend).build();
             Jedis admin = server.admin()) {
            scenario.run(new TwoJvms(proxy, failing, otherJvm, admin));
        }
    }
}
