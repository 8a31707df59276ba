package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockState;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;

/** Shared helpers for the Redis backend tests: short-timeout clients and bounded waits. */
final class RedisTestSupport {

    static final int CLIENT_TIMEOUT_MILLIS = 500;

    private RedisTestSupport() {
    }

    /** A pooled standalone client with a short timeout, so a dead server fails fast. */
    static RedisClient client(RedisServerProcess server) {
        return client(server.host(), server.port(), CLIENT_TIMEOUT_MILLIS);
    }

    /** A pooled standalone client of {@code host:port} with the given socket timeout. */
    static RedisClient client(String host, int port, int timeoutMillis) {
        return RedisClient.builder()
                .hostAndPort(host, port)
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(timeoutMillis).build())
                .build();
    }

    /**
     * Another owner asks for {@code key}, held now, and is refused: that marks the key as waited for, so its
     * release publishes a notice (an uncontended release publishes none).
     */
    static void askAsAnotherOwner(LockBackend store, String key) {
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, "another-owner", 10_000)).as("another owner's attempt on held key '%s'", key)
                .isInstanceOf(AcquireResult.Held.class);
    }

    /**
     * How long {@code key} stays held on a quorum of Redlock {@code masters}, in milliseconds: the quorum-th largest
     * PTTL of its lock key (-2 where a master does not have it). This is what a Redlock renewal answered RENEWED
     * promises; a master outside the quorum may not have run the renewal yet.
     */
    static long leaseOnAQuorum(List<RedisServerProcess> masters, String key) {
        RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
        List<Long> ttls = new java.util.ArrayList<>();
        for (RedisServerProcess master : masters) {
            try (redis.clients.jedis.Jedis admin = master.admin()) {
                ttls.add(admin.pttl(keys.lockKey(key)));
            }
        }
        ttls.sort(java.util.Comparator.reverseOrder());
        return ttls.get(masters.size() / 2);
    }

    /** The first key {@code prefix + i} whose lock key lives on {@code master}. */
    static String keyOwnedBy(RedisClusterSetup cluster, RedisServerProcess master, String prefix) {
        RedisKeys keys = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
        for (int i = 0; ; i++) {
            String key = prefix + i;
            if (cluster.masterOf(keys.lockKey(key)).port() == master.port()) {
                return key;
            }
        }
    }

    /**
     * Starts a daemon thread that waits up to {@code wait} for {@code key} through {@code locks},
     * records when it got the lock and releases it again; returns when it got it, or 0.
     */
    static Supplier<Long> startWaiter(LockManager locks, String key, Duration wait) {
        AtomicLong acquiredAt = new AtomicLong();
        Thread waiting = new Thread(() -> {
            try (LockHandle next = locks.acquire(key, wait)) {
                acquiredAt.set(System.nanoTime());
            }
        });
        waiting.setDaemon(true);
        waiting.start();
        return () -> {
            try {
                waiting.join(wait.toMillis() + 5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return acquiredAt.get();
        };
    }

    /**
     * Asserts that the waiter got the lock soon after {@code releasedAt}: with the holder's lease far
     * from its end, only a release notice explains a wake-up this fast.
     */
    static void assertWokenByNotice(Supplier<Long> waiter, long releasedAt, String where) {
        long acquiredAt = waiter.get();
        assertThat(acquiredAt).as("waiter on %s acquired", where).isNotZero();
        assertThat(Duration.ofNanos(acquiredAt - releasedAt)).as("wake-up after the release on %s", where)
                .isLessThan(Duration.ofSeconds(5));
    }

    /** Closes every non-null resource in order, as an {@code @AfterAll} does for a client and then its servers. */
    static void closeAll(AutoCloseable... resources) throws Exception {
        for (AutoCloseable resource : resources) {
            if (resource != null) {
                resource.close();
            }
        }
    }

    /** Polls {@code condition} until it holds or {@code timeout} passes; fails with {@code what} otherwise. */
    static void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Timed out after " + timeout.toMillis() + " ms waiting for: " + what);
            }
            sleep(10);
        }
    }

    /** Retries {@code call} while it throws, for the first calls after a restart hit stale pooled connections. */
    static <T> T retrying(Duration timeout, Supplier<T> call) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                return call.get();
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                sleep(20);
            }
        }
    }

    /** A listener that records the key of every lease reported lost, and when each key last heard from the watchdog. */
    static LockListener lossRecorder(List<String> lostKeys, Map<String, Long> lastWatchdogNews) {
        return new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                lostKeys.add(key);
                lastWatchdogNews.put(key, System.nanoTime());
            }

            @Override
            public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
                if (outcome != RenewalOutcome.ERROR) {
                    lastWatchdogNews.put(key, System.nanoTime());
                }
            }
        };
    }

    /** Waits until every handle's lease was renewed, or reported lost, after {@code nanoTime}. */
    static void awaitWatchdogNewsAfter(List<LockHandle> handles, Map<String, Long> lastWatchdogNews, long nanoTime) {
        await("a renewal or loss of every lease after the failover", Duration.ofSeconds(30), () -> handles.stream()
                .allMatch(h -> lastWatchdogNews.getOrDefault(h.key(), nanoTime) - nanoTime > 0));
    }

    /**
     * After a failover: every lock still held must still exclude another owner, and every lock no
     * longer held must have been reported lost to its holder.
     */
    static void assertHeldOrReportedLost(List<LockHandle> handles, List<String> lostKeys, LockManager locks,
                                         LockBackend intruder) {
        for (LockHandle handle : handles) {
            if (handle.isHeld()) {
                AcquireResult result = retrying(Duration.ofSeconds(10),
                        () -> intruder.tryAcquire(LockKind.EXCLUSIVE, handle.key(), "intruder-" + System.nanoTime(), 60_000));
                assertThat(result).as("'%s' is held, so nobody else may take it", handle.key())
                        .isInstanceOf(AcquireResult.Held.class);
            } else {
                await("loss of '" + handle.key() + "' reported", Duration.ofSeconds(10),
                        () -> lostKeys.contains(handle.key()));
                assertThat(handle.state()).isEqualTo(LockState.LOST);
            }
        }
        assertThat(locks.admin().heldLocks().size()).isLessThanOrEqualTo(handles.size());
    }

    /** Closes a handle, ignoring the lost-lease exception a lost one throws. */
    static void closeQuietly(LockHandle handle) {
        try {
            handle.close();
        } catch (RuntimeException e) {
            // A lost lease reports itself at release; the test has already checked it was reported.
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
