package dev.dlock.boot;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.aspect.DistributedLockAnnotationValidator;
import dev.dlock.aspect.DistributedLockAspect;
import dev.dlock.aspect.LockAspectSupport;
import dev.dlock.boot.actuate.DistributedLockEndpoint;
import dev.dlock.boot.actuate.LockStoreHealthIndicator;
import dev.dlock.boot.metrics.LockManagerMetrics;
import dev.dlock.boot.metrics.LockMeterDefaults;
import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.boot.metrics.MicrometerLockListener;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The auto-configurations' conditions, bindings, validation and back-off, against a real Redis. */
class DistributedLockAutoConfigurationTest {

    private static RedisServerProcess redis;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RedisLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class,
                    DistributedLockMetricsAutoConfiguration.class, DistributedLockEndpointAutoConfiguration.class,
                    DistributedLockHealthAutoConfiguration.class));

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @BeforeEach
    void flush() {
        try (Jedis admin = redis.admin()) {
            admin.flushAll();
        }
    }

    private static String url() {
        return "dlock.redis.url=" + redis.uri();
    }

    @Test
    void createsEveryBeanFromDlockRedisUrl() {
        runner.withPropertyValues(url(), "management.endpoints.web.exposure.include=dlock").run(context -> {
            assertThat(context).hasNotFailed()
                    .hasSingleBean(UnifiedJedis.class)
                    .hasSingleBean(RedisLockBackend.class)
                    .hasSingleBean(LockManager.class)
                    .hasSingleBean(LockAspectSupport.class)
                    .hasSingleBean(DistributedLockAspect.class)
                    .hasSingleBean(DistributedLockAnnotationValidator.class)
                    .hasSingleBean(DistributedLockEndpoint.class)
                    .hasSingleBean(LockStoreHealthIndicator.class)
                    .doesNotHaveBean(MicrometerLockListener.class);
            assertThat(BootLine.status(context.getBean(LockStoreHealthIndicator.class))).isEqualTo("UP");
        });
    }

    /**
     * spring.threads.virtual.enabled puts dlock's asynchronous store calls on virtual threads where Boot would use them
     * (Java 21+) and is ignored before, as Boot ignores it: the start never fails for it.
     */
    @Test
    void virtualThreadsFollowSpringThreadsVirtualEnabled() {
        runner.withPropertyValues(url(), "spring.threads.virtual.enabled=true").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(DistributedLockAutoConfiguration.virtualThreadsActive(context.getEnvironment()))
                    .isEqualTo(Runtime.version().feature() >= 21);
            LockManager locks = context.getBean(LockManager.class);
            try (LockHandle held = locks.acquireAsync(dev.dlock.core.LockRequest.builder("virtual-async").build())
                    .get(10, java.util.concurrent.TimeUnit.SECONDS)) {
                assertThat(held.isHeld()).isTrue();
            }
        });
        runner.withPropertyValues(url()).run(context ->
                assertThat(DistributedLockAutoConfiguration.virtualThreadsActive(context.getEnvironment())).isFalse());
    }

    @Test
    void healthReportsTheWatchdogStallsOfTheLockManager() {
        runner.withPropertyValues(url()).run(context -> {
            LockManager locks = context.getBean(LockManager.class);
            try (LockHandle watched = locks.acquire("health-watched", Duration.ZERO)) {
                assertThat(locks.admin().watchdogStalledCalls()).as("a watchdog renewing on a healthy Redis").isZero();
                LockStoreHealthIndicator health = context.getBean(LockStoreHealthIndicator.class);
                assertThat(BootLine.status(health)).isEqualTo("UP");
                assertThat(BootLine.details(health))
                        .containsEntry(LockStoreHealthIndicator.WATCHDOG_STALLED_CALLS, 0)
                        .containsKey("pingMillis");
            }
        });
    }

    /** End to end: a stalled store (SIGSTOP) stalls the watchdog's renewal call, and health says DOWN until it answers again. */
    @Test
    void healthIsDownWhileTheWatchdogIsStalledOnASuspendedStore() {
        try (RedisServerProcess own = RedisServerProcess.start()) {
            // 2 s: a 300 ms lease ran out before its first renewal at a load of 22, and was then never renewed.
            runner.withPropertyValues("dlock.redis.url=" + own.uri(), "dlock.lease-time=2s", "dlock.redis.timeout=10s")
                    .run(context -> {
                        LockManager locks = context.getBean(LockManager.class);
                        LockStoreHealthIndicator indicator = context.getBean(LockStoreHealthIndicator.class);
                        LockHandle watched = locks.acquire("health-stalled", Duration.ZERO);
                        awaitCondition("a first renewal", () -> locks.admin().watchdogRenewCallCount() > 0);
                        own.suspend();
                        // Every command the store ran, it ran before this moment.
                        long suspendedAt = System.nanoTime();
                        try {
                            // Not health() in the loop: before the stall shows, its PING would wait out the socket timeout.
                            awaitCondition("the renewal call to stall", () -> locks.admin().watchdogStalledCalls() == 1);
                            assertThat(BootLine.status(indicator)).isEqualTo("DOWN");
                            assertThat(BootLine.details(indicator)).containsEntry(LockStoreHealthIndicator.WATCHDOG_STALLED_CALLS, 1);
                            awaitCondition("the lease to read as not held while the store is stalled", () -> !watched.isHeld());
                            // The engine's estimate runs from a renewal's send time, the store's expiry from when it ran
                            // (before the suspension): resumed earlier, the store may still hold the key, and the next
                            // renewal would rightly keep it. So stay suspended until the store's own expiry has passed.
                            awaitCondition("the key's lease to have run out in the store", () ->
                                    System.nanoTime() - suspendedAt > Duration.ofMillis(2_000 + 50).toNanos());
                            assertThat(own.isSuspended()).isTrue();
                        } finally {
                            own.resume();
                        }
                        awaitCondition("health UP again", () -> BootLine.status(indicator).equals("UP"));
                        assertThatThrownBy(watched::close).isInstanceOf(LockLostException.class);
                    });
        }
    }

    private static void awaitCondition(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waiting for %s", what).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    /** Without the chosen store's auto-configuration (its module missing), the start fails saying so, not with a bare missing bean. */
    @Test
    void aStoreWithoutItsModuleFailsTheStartNamingTheStore() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(DistributedLockAutoConfiguration.class))
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(messages(context.getStartupFailure()))
                            .contains("dlock.store=redis needs dev.dlock:" + BootLine.REDIS_STARTER + " on the class path");
                });
    }

    /**
     * The key prefix moved under the store's prefix; the old name keeps working for a release, and the new one wins.
     * Seen on the record a release leaves beside the key (an acquisition whose token nobody asked for writes no counter).
     */
    @Test
    void theDeprecatedKeyPrefixStillWorksAndTheRedisOneWins() {
        runner.withPropertyValues(url(), "dlock.key-prefix=old:").run(context -> {
            context.getBean(LockManager.class).acquire("order-d", Duration.ZERO).close();
            try (Jedis admin = redis.admin()) {
                assertThat(admin.exists("old:{order-d}:released-by")).as("the deprecated dlock.key-prefix is used").isTrue();
            }
        });
        runner.withPropertyValues(url(), "dlock.key-prefix=old:", "dlock.redis.key-prefix=new:").run(context -> {
            context.getBean(LockManager.class).acquire("order-n", Duration.ZERO).close();
            try (Jedis admin = redis.admin()) {
                assertThat(admin.exists("new:{order-n}:released-by")).as("dlock.redis.key-prefix wins").isTrue();
                assertThat(admin.exists("old:{order-n}:released-by")).isFalse();
            }
        });
    }

    @Test
    void propertiesTakeEffect() {
        runner.withPropertyValues(url(), "dlock.redis.key-prefix=shop:", "dlock.wait-time=250ms", "dlock.lease-time=3s",
                "dlock.watchdog.batch-size=7", "dlock.aspect.order=42", "dlock.redis.timeout=700ms").run(context -> {
            LockManager locks = context.getBean(LockManager.class);
            assertThat(locks.defaultWaitTime()).isEqualTo(Duration.ofMillis(250));
            assertThat(locks.backend().capabilities().renewalGrouping().orElseThrow().maxBatchSize()).isEqualTo(7);
            assertThat(context.getBean(DistributedLockAspect.class).getOrder()).isEqualTo(42);
            try (LockHandle ignored = locks.acquire("order-1", Duration.ZERO); Jedis admin = redis.admin()) {
                assertThat(admin.keys("shop:*")).contains("shop:{order-1}");
                assertThat(admin.pttl("shop:{order-1}")).isBetween(1L, 3000L);
            }
        });
    }

    @Test
    void localHandOffAndCoalescedRoundTripsAreOnByDefaultAndCanBeSwitchedOff() {
        runner.withPropertyValues(url()).run(context -> {
            assertThat(context.getBean(LockManager.class).handsOffLocally()).isTrue();
            assertThat(context.getBean(RedisLockBackend.class).coalescesRoundTrips()).isTrue();
        });
        runner.withPropertyValues(url(), "dlock.local-hand-off=false", "dlock.redis.coalesce-round-trips=false").run(context -> {
            assertThat(context.getBean(LockManager.class).handsOffLocally()).isFalse();
            assertThat(context.getBean(RedisLockBackend.class).coalescesRoundTrips()).isFalse();
        });
    }

    @Test
    void onLeaseLostDefaultsToThrowAndCanLog() {
        runner.withPropertyValues(url()).run(context ->
                assertThatThrownBy(() -> acquireAndLoseLease(context.getBean(LockManager.class)))
                        .isInstanceOf(LockLostException.class));
        runner.withPropertyValues(url(), "dlock.on-lease-lost=log").run(context ->
                acquireAndLoseLease(context.getBean(LockManager.class)));
    }

    /** Acquires, lets the store drop the key and another application take it, then releases. */
    private static void acquireAndLoseLease(LockManager locks) {
        try (UnifiedJedis otherClient = BootLine.redisClient(redis.host(), redis.port());
             LockManager otherApplication = LockManager.builder(RedisLockBackend.builder(otherClient).build()).build()) {
            LockHandle lock = locks.acquire("lost", Duration.ZERO);
            try (Jedis admin = redis.admin()) {
                admin.del("dlock:{lost}");
            }
            try (LockHandle taken = otherApplication.acquire("lost", Duration.ZERO)) {
                lock.close();
            }
        }
    }

    @Test
    void urlCarriesUserPasswordAndDatabase() {
        try (Jedis admin = redis.admin()) {
            admin.aclSetUser("locker", "on", ">s3cret", "~*", "&*", "+@all");
        }
        String withCredentials = "redis://locker:s3cret@" + redis.host() + ":" + redis.port() + "/3";
        runner.withPropertyValues("dlock.redis.url=" + withCredentials).run(context -> {
            lockOnce(context.getBean(LockManager.class), "in-db-3");
            try (Jedis admin = redis.admin()) {
                assertThat(admin.clientList()).contains("user=locker");
                admin.select(3);
                assertThat(admin.keys("dlock:*")).isNotEmpty();
            }
        });
        runner.withPropertyValues(url(), "dlock.redis.username=locker", "dlock.redis.password=s3cret").run(context -> {
            lockOnce(context.getBean(LockManager.class), "explicit-user");
            try (Jedis admin = redis.admin()) {
                assertThat(admin.clientList()).contains("user=locker");
            }
        });
        runner.withPropertyValues(url(), "dlock.redis.username=locker", "dlock.redis.password=wrong").run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains("WRONGPASS").contains("dlock.redis.url");
        });
        runner.withPropertyValues(url(), "dlock.redis.username=locker", "dlock.redis.password=wrong",
                "dlock.verify-on-start=false").run(context ->
                assertThatThrownBy(() -> context.getBean(LockManager.class).backend().ping())
                        .hasStackTraceContaining("WRONGPASS"));
    }

    /**
     * valkey:// is accepted where redis:// is (Valkey speaks the Redis protocol; the server here is Redis, no Valkey
     * server can be had on this machine), and valkeys:// means TLS as rediss:// does.
     */
    @Test
    void valkeyUrlsAreAcceptedAsTheirRedisEquivalents() {
        try (Jedis admin = redis.admin()) {
            admin.aclSetUser("valkey-user", "on", ">s3cret", "~*", "&*", "+@all");
        }
        runner.withPropertyValues("dlock.redis.url=valkey://valkey-user:s3cret@" + redis.host() + ":" + redis.port() + "/2")
                .run(context -> {
                    lockOnce(context.getBean(LockManager.class), "over-valkey-url");
                    try (Jedis admin = redis.admin()) {
                        assertThat(admin.clientList()).contains("user=valkey-user");
                        admin.select(2);
                        assertThat(admin.keys("dlock:*")).isNotEmpty();
                    }
                });
        assertThat(RedisConnectionSettings.validUrl("dlock.redis.url", "VALKEYS://u:p@cache.example:6390/1"))
                .isEqualTo("rediss://u:p@cache.example:6390/1");
        assertThat(RedisConnectionSettings.validUrl("dlock.redis.url", "valkey://cache.example:6390"))
                .isEqualTo("redis://cache.example:6390");
        assertThatThrownBy(() -> RedisConnectionSettings.validUrl("dlock.redis.url", "memcache://cache.example:6390"))
                .hasMessageContaining("redis://, rediss://, valkey:// or valkeys://");
    }

    /**
     * Jedis 8 removed the clients the starter builds (JedisPooled, JedisSentineled): the start fails naming the range
     * and the way out, instead of a NoClassDefFoundError; the Jedis the Boot lines manage pass.
     */
    @Test
    void aJedisTheStarterCannotBuildOnFailsTheStartNamingTheRange() {
        assertThatThrownBy(() -> RedisConnectionSettings.requireStarterJedis("8.0.2"))
                .isInstanceOf(DistributedLockStartupException.class)
                .hasMessageContaining("Jedis 8.0.2").hasMessageContaining("Jedis 6.0 to 7.x")
                .satisfies(e -> assertThat(((DistributedLockStartupException) e).getAction()).contains("@DlockRedisClient"));
        RedisConnectionSettings.requireStarterJedis("7.4.1");
        RedisConnectionSettings.requireStarterJedis("6.0.0");
        RedisConnectionSettings.requireStarterJedis(null);
    }

    /** dlock.verify-on-start (on by default): a Redis that does not answer stops the start, naming the URL to fix. */
    @Test
    void aRedisThatDoesNotAnswerFailsTheStartNamingTheUrl() {
        String nowhere = "127.0.0.1:" + RedisServerProcess.freePort();
        runner.withPropertyValues("dlock.redis.url=redis://" + nowhere).run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure()))
                    .contains("dlock cannot use Redis at " + nowhere + " (standalone, from dlock.redis.url)")
                    .contains("Check dlock.redis.url")
                    .contains("dlock.verify-on-start=false");
        });
    }

    /** Where the settings came from spring.data.redis.*, those are the properties named. */
    @Test
    void aSpringDataRedisThatDoesNotAnswerNamesThoseProperties() {
        int nowhere = RedisServerProcess.freePort();
        runner.withPropertyValues("spring.data.redis.host=127.0.0.1", "spring.data.redis.port=" + nowhere).run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure()))
                    .contains("dlock cannot use Redis at 127.0.0.1:" + nowhere)
                    .contains("spring.data.redis.host and spring.data.redis.port");
        });
    }

    /** dlock.verify-on-start=false keeps the lazy start: the context starts, and the store fails when used. */
    @Test
    void withVerifyOnStartOffARedisThatDoesNotAnswerFailsOnlyWhenUsed() {
        runner.withPropertyValues("dlock.redis.url=redis://127.0.0.1:" + RedisServerProcess.freePort(),
                "dlock.verify-on-start=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThatThrownBy(() -> context.getBean(LockManager.class).backend().ping())
                    .isInstanceOf(LockBackendException.class);
        });
    }

    @Test
    void fallsBackToSpringDataRedisProperties() {
        runner.withPropertyValues("spring.data.redis.host=" + redis.host(), "spring.data.redis.port=" + redis.port(),
                "spring.data.redis.database=5", "spring.data.redis.timeout=800ms").run(context -> {
            lockOnce(context.getBean(LockManager.class), "fallback");
            assertThat(keysInDatabase(5)).isNotEmpty();
        });
        runner.withPropertyValues("spring.data.redis.url=" + redis.uri() + "/6").run(context -> {
            lockOnce(context.getBean(LockManager.class), "fallback-url");
            assertThat(keysInDatabase(6)).isNotEmpty();
        });
    }

    private static java.util.Set<String> keysInDatabase(int database) {
        try (Jedis admin = redis.admin()) {
            admin.select(database);
            return admin.keys("dlock:*");
        }
    }

    @Test
    void dlockRedisWinsOverSpringDataRedis() {
        runner.withPropertyValues(url(), "spring.data.redis.port=1").run(context ->
                lockOnce(context.getBean(LockManager.class), "dlock-wins"));
    }

    private static void lockOnce(LockManager locks, String key) {
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            assertThat(lock.fencingToken()).isPositive();
        }
    }

    @Test
    void applicationClientNamedDlockRedisClientWinsAndIsNotClosed() {
        try (UnifiedJedis own = BootLine.redisClient(redis.host(), redis.port())) {
            runner.withPropertyValues("dlock.redis.url=redis://127.0.0.1:1")
                    .withBean(DlockRedisClient.BEAN_NAME, UnifiedJedis.class, () -> own,
                            definition -> definition.setDestroyMethodName(""))
                    .run(context -> {
                        assertThat(context).hasSingleBean(UnifiedJedis.class);
                        assertThat(context.getBean(DlockRedisClient.BEAN_NAME)).isSameAs(own);
                        lockOnce(context.getBean(LockManager.class), "own-client");
                    });
            assertThat(own.ping()).isEqualTo("PONG");
        }
    }

    @Test
    void applicationClientMarkedDlockRedisClientWins() {
        runner.withPropertyValues("dlock.redis.url=redis://127.0.0.1:1")
                .withUserConfiguration(MarkedClientConfiguration.class)
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(UnifiedJedis.class).hasBean("locksClient")
                            .doesNotHaveBean(DlockRedisClient.BEAN_NAME);
                    lockOnce(context.getBean(LockManager.class), "marked-client");
                });
    }

    /** The application's own client for dlock, marked with the qualifier under a name of its choosing. */
    @Configuration(proxyBeanMethods = false)
    static class MarkedClientConfiguration {
        @Bean(destroyMethod = "close")
        @DlockRedisClient
        UnifiedJedis locksClient() {
            return BootLine.redisClient(redis.host(), redis.port());
        }
    }

    /** An application's cache client is not taken as the lock store: dlock locks where its own settings point. */
    @Test
    void otherApplicationClientIsNotUsedForLocks() {
        try (RedisServerProcess cacheRedis = RedisServerProcess.start();
             UnifiedJedis cache = BootLine.redisClient(cacheRedis.host(), cacheRedis.port())) {
            runner.withPropertyValues(url())
                    .withBean("cacheRedis", UnifiedJedis.class, () -> cache, definition -> definition.setDestroyMethodName(""))
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBean(DlockRedisClient.BEAN_NAME)).isNotSameAs(cache);
                        LockManager locks = context.getBean(LockManager.class);
                        try (LockHandle lock = locks.acquire("cache-neighbour", Duration.ZERO)) {
                            try (Jedis lockStore = redis.admin(); Jedis cacheStore = cacheRedis.admin()) {
                                assertThat(lockStore.exists("dlock:{cache-neighbour}")).as("locked in dlock's Redis").isTrue();
                                assertThat(cacheStore.dbSize()).as("nothing written to the cache's Redis").isZero();
                            }
                        }
                    });
        }
    }

    @Test
    void autoConfiguredClientIsClosedWithTheContext() {
        List<UnifiedJedis> created = new ArrayList<>();
        runner.withPropertyValues(url()).run(context -> created.add(context.getBean(UnifiedJedis.class)));
        assertThatThrownBy(() -> created.get(0).ping()).isInstanceOf(JedisException.class);
    }

    @Test
    void backsOffForTheApplicationsLockManager() {
        try (UnifiedJedis own = BootLine.redisClient(redis.host(), redis.port());
             LockManager ownManager = LockManager.builder(RedisLockBackend.builder(own).build()).build()) {
            runner.withPropertyValues(url()).withBean("ownManager", LockManager.class, () -> ownManager, definition -> definition.setDestroyMethodName(""))
                    .withBean(UnifiedJedis.class, () -> own, definition -> definition.setDestroyMethodName(""))
                    .run(context -> {
                        assertThat(context).hasSingleBean(LockManager.class).hasBean("ownManager");
                        assertThat(context.getBean(LockAspectSupport.class).lockManager()).isSameAs(ownManager);
                    });
        }
    }

    @Test
    void usesTheApplicationsLockBackend() {
        try (UnifiedJedis own = BootLine.redisClient(redis.host(), redis.port())) {
            LockBackend backend = RedisLockBackend.builder(own).keyPrefix("mine:").build();
            runner.withPropertyValues(url()).withBean(LockBackend.class, () -> backend).run(context -> {
                assertThat(context).hasSingleBean(LockBackend.class);
                assertThat(context.getBean(LockManager.class).backend()).isSameAs(backend);
            });
        }
    }

    @Test
    void disabledConfiguresNothing() {
        runner.withPropertyValues(url(), "dlock.enabled=false").run(context ->
                assertThat(context).hasNotFailed().doesNotHaveBean(LockManager.class).doesNotHaveBean(UnifiedJedis.class)
                        .doesNotHaveBean(DistributedLockEndpoint.class).doesNotHaveBean(LockStoreHealthIndicator.class));
    }

    @Test
    void endpointOnlyWhenExposed() {
        runner.withPropertyValues(url()).run(context ->
                assertThat(context).hasSingleBean(LockManager.class).doesNotHaveBean(DistributedLockEndpoint.class));
    }

    @Test
    void healthIndicatorCanBeSwitchedOff() {
        runner.withPropertyValues(url(), "management.health.dlock.enabled=false").run(context ->
                assertThat(context).hasSingleBean(LockManager.class).doesNotHaveBean(LockStoreHealthIndicator.class));
    }

    @Test
    void withoutActuatorThereIsNoEndpointOrHealth() {
        runner.withPropertyValues(url(), "management.endpoints.web.exposure.include=dlock")
                // Hides the types the @ConditionalOnClass checks look for; the condition annotations stay loadable,
                // as they would not be in an application without Actuator (where Java drops missing annotations).
                .withClassLoader(new FilteredClassLoader(Endpoint.class, BootLine.HEALTH_INDICATOR))
                .run(context -> assertThat(context).hasSingleBean(LockManager.class)
                        .doesNotHaveBean(DistributedLockEndpoint.class).doesNotHaveBean(LockStoreHealthIndicator.class));
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
        "dlock.wait-time           | -1s",
        "dlock.wait-time           | soon",
        "dlock.lease-time          | -30s",
        "dlock.lease-time          | forever",
        "dlock.lease-time          | 10ms",
        "dlock.abort-check-interval| 0",
        "dlock.watchdog.batch-size | 0",
        "dlock.watchdog.batch-size | many",
        "dlock.redis.url           | http://localhost:6380",
        "dlock.redis.url           | redis://",
        "dlock.redis.timeout       | -5s",
        "dlock.redis.cluster.nodes | localhost",
        "dlock.on-lease-lost       | explode",
        "dlock.redis.key-prefix    | {app}",
        "dlock.key-prefix          | {app}",
        "spring.data.redis.url     | http://localhost:6380",
    })
    void badPropertyFailsStartupNamingIt(String property, String value) {
        // The fallback points at the test's own server, so no case can reach a Redis on the default port.
        runner.withPropertyValues("spring.data.redis.url=" + redis.uri(), property + "=" + value).run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains(property);
        });
    }

    /** A locked method that blocks until interrupted, saying whether it was. */
    static class BlockingWorker {
        final java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);

        @dev.dlock.annotation.DistributedLock(name = "worker", key = "#id")
        public String work(String id) {
            entered.countDown();
            try {
                Thread.sleep(60_000);
                return "slept its minute";
            } catch (InterruptedException e) {
                return "interrupted";
            }
        }

        /** The latch, read through the proxy (whose own fields are not the bean's). */
        public java.util.concurrent.CountDownLatch entered() {
            return entered;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class WorkerConfiguration {
        @Bean
        BlockingWorker blockingWorker() {
            return new BlockingWorker();
        }
    }

    /** {@code dlock.stop-work-on-lease-lost=true}: a method with {@code whenLeaseLost = DEFAULT} is interrupted by a forced release. */
    @ParameterizedTest(name = "dlock.stop-work-on-lease-lost={0}")
    @org.junit.jupiter.params.provider.CsvSource({"true, interrupted", "false, slept its minute"})
    void stopWorkOnLeaseLostIsTheAnnotationsDefault(boolean stop, String expected) {
        runner.withConfiguration(AutoConfigurations.of(org.springframework.boot.autoconfigure.aop.AopAutoConfiguration.class))
                .withUserConfiguration(WorkerConfiguration.class)
                .withPropertyValues(url(), "dlock.stop-work-on-lease-lost=" + stop)
                .run(context -> {
                    BlockingWorker worker = context.getBean(BlockingWorker.class);
                    LockManager locks = context.getBean(LockManager.class);
                    java.util.concurrent.CompletableFuture<String> outcome = new java.util.concurrent.CompletableFuture<>();
                    Thread caller = new Thread(() -> {
                        try {
                            outcome.complete(worker.work("42"));
                        } catch (RuntimeException e) {
                            outcome.complete(e.getClass().getSimpleName() + " after " + (stop ? "interrupted" : "its run"));
                        }
                    });
                    caller.setDaemon(true);
                    caller.start();
                    assertThat(worker.entered().await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                    assertThat(locks.admin().forceRelease("worker", "worker:42")).hasSize(1);
                    if (stop) {
                        assertThat(outcome.get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo("LockLostException after interrupted");
                    } else {
                        Thread.sleep(500);
                        assertThat(outcome).as("still running, not interrupted").isNotDone();
                        caller.interrupt();
                        assertThat(outcome.get(10, java.util.concurrent.TimeUnit.SECONDS)).isEqualTo("LockLostException after its run");
                    }
                });
    }

    static Stream<Arguments> rulesOfTheBuilders() {
        return Stream.of(
                Arguments.of("dlock.wait-time", "-1ms", "must not be negative"),
                Arguments.of("dlock.lease-time", "29ms", "at least 30 ms"),
                Arguments.of("dlock.abort-check-interval", "0ms", "must be positive"),
                Arguments.of("dlock.abort-check-interval", "-5ms", "must be positive"),
                // 0: the lock manager's rule, checked before any bean; above 10000: the Redis store's, when it is built.
                Arguments.of("dlock.watchdog.batch-size", "0", "must be at least 1"),
                Arguments.of("dlock.watchdog.batch-size", "10001", "between 1 and 10000"),
                Arguments.of("dlock.redis.key-prefix", "app{1}:", "must not contain '{' or '}'"),
                Arguments.of("dlock.redis.fair-waiter-timeout", "50ms", "must be at least 100 ms"),
                Arguments.of("dlock.redis.key-prefix", "p".repeat(257), "at most 256 bytes"),
                Arguments.of("dlock.key-prefix", "app{1}:", "must not contain '{' or '}'"));
    }

    /** A rule kept by a builder (LockManager, LockRequest, RedisLockBackend) still fails the start, naming the property and the rule. */
    @ParameterizedTest(name = "{0}={1}")
    @MethodSource("rulesOfTheBuilders")
    void builderRuleFailsStartupNamingTheProperty(String property, String value, String rule) {
        runner.withPropertyValues(url(), property + "=" + value).run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains(property).contains(rule);
        });
    }

    /** Without the auto-configured Redis store the manager's own rule (at least 1) still names the property. */
    @Test
    void batchSizeIsCheckedByTheManagerForTheApplicationsOwnBackend() {
        try (UnifiedJedis own = BootLine.redisClient(redis.host(), redis.port())) {
            LockBackend backend = RedisLockBackend.builder(own).build();
            runner.withPropertyValues(url(), "dlock.watchdog.batch-size=0").withBean(LockBackend.class, () -> backend)
                    .run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(messages(context.getStartupFailure()))
                                .contains("dlock.watchdog.batch-size").contains("at least 1");
                    });
        }
    }

    @Test
    void sentinelAndClusterTogetherFailStartup() {
        runner.withPropertyValues("dlock.redis.sentinel.master=mymaster", "dlock.redis.sentinel.nodes=127.0.0.1:26379",
                "dlock.redis.cluster.nodes=127.0.0.1:7000").run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure()))
                    .contains("dlock.redis.sentinel and dlock.redis.cluster are both set");
        });
        runner.withPropertyValues("dlock.redis.sentinel.master=mymaster").run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains("dlock.redis.sentinel.nodes");
        });
    }

    @Test
    void badUrlMessageDoesNotLeakThePassword() {
        runner.withPropertyValues("dlock.redis.url=http://user:topsecret@localhost:6380").run(context ->
                assertThat(messages(context.getStartupFailure())).contains("dlock.redis.url").doesNotContain("topsecret"));
    }

    /**
     * A misspelt dlock property used to be ignored, and dlock connected wherever the fallback pointed
     * (spring.data.redis.*, else localhost:6379): the start fails naming the property instead.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"dlock.redis.ulr", "dlock.lease-tiem", "dlock.watchdog.batch-sise", "dlock.redis.sentinel.mastr"})
    void anUnknownDlockPropertyFailsTheStartNamingIt(String typo) {
        runner.withPropertyValues("spring.data.redis.url=" + redis.uri(), typo + "=redis://elsewhere:6379").run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains(typo);
        });
    }

    /** Falling back to spring.data.redis.* is worth a WARN naming where the connection came from; dlock.redis.url is not. */
    @Test
    void aConnectionFromSpringDataRedisIsLoggedAtWarnNamingTheSource() {
        List<String> fromSpringData = warningsOf(RedisLockStoreAutoConfiguration.class, () ->
                runner.withPropertyValues("spring.data.redis.url=" + redis.uri()).run(context -> assertThat(context).hasNotFailed()));
        assertThat(fromSpringData).singleElement().asString()
                .contains("dlock connects to Redis").contains("from spring.data.redis.*")
                .contains("dlock.redis.url, .sentinel and .cluster are not set");
        List<String> fromDlock = warningsOf(RedisLockStoreAutoConfiguration.class, () ->
                runner.withPropertyValues(url()).run(context -> assertThat(context).hasNotFailed()));
        assertThat(fromDlock).isEmpty();
    }

    /** With no server named anywhere dlock would connect to localhost:6379, possibly someone else's Redis: say so. */
    @Test
    void theDefaultServerIsNamedAsTheDefault() {
        RedisConnectionSettings settings = RedisConnectionSettings.resolve(new RedisStoreProperties(),
                new Binder(), (connectTimeout, readTimeout) -> null);
        assertThat(settings.describe()).contains("[localhost:6379]")
                .contains("neither dlock.redis.* nor spring.data.redis.* names a server");
    }

    private static List<String> warningsOf(Class<?> loggerOf, Runnable run) {
        Logger logger = (Logger) LoggerFactory.getLogger(loggerOf);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        try {
            run.run();
        } finally {
            logger.detachAppender(logged);
        }
        return logged.list.stream().filter(event -> event.getLevel() == Level.WARN).map(ILoggingEvent::getFormattedMessage).toList();
    }

    private static String messages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }

    /** The metrics auto-configuration together with Boot's own registry auto-configuration. */
    @Nested
    class Metrics {

        private final ApplicationContextRunner withRegistry = runner.withPropertyValues(url())
                .withConfiguration(BootLine.METRICS);

        @Test
        void registersTheListenerAndTheWatchdogGauge() {
            withRegistry.run(context -> {
                assertThat(context).hasSingleBean(MicrometerLockListener.class).hasSingleBean(LockManagerMetrics.class)
                        .hasSingleBean(LockMeterDefaults.class);
                MeterRegistry registry = context.getBean(MeterRegistry.class);
                lockOnce(context.getBean(LockManager.class), "metered");
                assertThat(registry.get(LockMetrics.LEASE_LOST).tag(LockMetrics.TAG_LOCK_NAME, LockRequest.DEFAULT_NAME)
                        .counter().count()).isZero();
                assertThat(registry.get(LockMetrics.WATCHDOG_LEASES).gauge().value()).isZero();
            });
        }

        @Test
        void theStalledGaugeReadsTheLockManager() {
            withRegistry.run(context -> {
                LockManager locks = context.getBean(LockManager.class);
                MeterRegistry registry = context.getBean(MeterRegistry.class);
                try (LockHandle watched = locks.acquire("stall-watched", Duration.ZERO)) {
                    assertThat(registry.get(LockMetrics.WATCHDOG_STALLED).gauge().value())
                            .isEqualTo(locks.admin().watchdogStalledCalls());
                    assertThat(registry.get(LockMetrics.WATCHDOG_STALLED).gauge().getId().getDescription())
                            .isEqualTo(LockMetrics.WATCHDOG_STALLED_DESCRIPTION);
                }
            });
        }

        @Test
        void switchedOffByProperty() {
            withRegistry.withPropertyValues("dlock.metrics.enabled=false").run(context ->
                    assertThat(context).hasSingleBean(LockManager.class).doesNotHaveBean(MicrometerLockListener.class));
        }

        @Test
        void absentWithoutMicrometer() {
            runner.withPropertyValues(url()).withClassLoader(new FilteredClassLoader("io.micrometer.core")).run(context ->
                    assertThat(context).hasSingleBean(LockManager.class).doesNotHaveBean(MicrometerLockListener.class));
        }
    }
}
