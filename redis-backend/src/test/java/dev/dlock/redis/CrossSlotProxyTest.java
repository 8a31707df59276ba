package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.redis.CrossSlotRejectingProxy;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;

/** Behind a proxy that refuses multi-slot scripts, cluster mode never sends one: every lease on every slot is renewed. */
class CrossSlotProxyTest {

    private static RedisServerProcess redis;
    private static CrossSlotRejectingProxy proxy;
    private static RedisClient client;

    @BeforeAll
    static void start() {
        redis = RedisServerProcess.start();
        proxy = CrossSlotRejectingProxy.start(redis);
        client = RedisClient.builder().hostAndPort(proxy.host(), proxy.port())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(2000).build()).build();
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
        }
        if (proxy != null) {
            proxy.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void theProxyRefusesAMultiSlotRenewalOfAStandaloneBackend() {
        try (RedisLockBackend standalone = RedisLockBackend.builder(client).cluster(false).build()) {
            standalone.tryAcquire(LockKind.EXCLUSIVE, "a", "o", 10_000);
            standalone.tryAcquire(LockKind.EXCLUSIVE, "b", "o", 10_000);
            assertThatThrownBy(() -> standalone.renew(List.of(new LeaseRenewal("a", "o", 10_000), new LeaseRenewal("b", "o", 10_000))))
                    .isInstanceOf(LockBackendException.class).hasMessageContaining("CROSSSLOT");
        }
    }

    @Test
    void inClusterModeTwoHundredLeasesOnManySlotsAreRenewedWithoutACrossSlotError() {
        long refusedBefore = proxy.refusedScripts();
        long scriptsBefore = proxy.scripts();
        Map<String, AtomicLong> renewals = new ConcurrentHashMap<>();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).cluster(true).build();
             LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofMillis(900))
                     .listener(new LockListener() {
                         @Override
                         public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
                             if (outcome == RenewalOutcome.RENEWED) {
                                 renewals.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
                             }
                         }
                     }).build()) {
            List<LockHandle> held = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                held.add(locks.acquire("proxied-" + i, Duration.ofSeconds(5)));
            }
            RedisTestSupport.await("three renewal rounds for every lease", Duration.ofSeconds(20), () -> held.stream()
                    .allMatch(h -> renewals.getOrDefault(h.key(), new AtomicLong()).get() >= 3));
            assertThat(locks.admin().watchdogErrorCount()).isZero();
            assertThat(held).allMatch(LockHandle::isHeld);
            held.forEach(LockHandle::close);
        }
        assertThat(proxy.scripts() - scriptsBefore).as("the scripts went through the proxy").isGreaterThan(600);
        assertThat(proxy.refusedScripts() - refusedBefore).as("CROSSSLOT refusals").isZero();
    }
}
