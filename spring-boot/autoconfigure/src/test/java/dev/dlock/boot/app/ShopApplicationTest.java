package dev.dlock.boot.app;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.testkit.redis.RedisServerProcess;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The starter in a running web application configured by application.yml, against a real Redis. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ShopApplicationTest {

    private static final RedisServerProcess REDIS = RedisServerProcess.start();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort
    private int port;

    @Autowired
    private ShippingService shipping;

    @Autowired
    private LockManager lockManager;

    @Autowired
    private MeterRegistry meterRegistry;

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", REDIS::uri);
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void applicationYmlBindsAndTakesEffect() throws Exception {
        assertThat(lockManager.defaultWaitTime()).isEqualTo(Duration.ofSeconds(2));
        assertThat(lockManager.backend().capabilities().renewalGrouping().orElseThrow().maxBatchSize()).isEqualTo(50);
        try (HeldOrder held = HeldOrder.hold(shipping, "o-yml"); Jedis admin = REDIS.admin()) {
            assertThat(admin.exists("shop:{orders:o-yml}")).isTrue();
            assertThat(admin.pttl("shop:{orders:o-yml}")).isBetween(1L, 3000L);
            assertThatThrownBy(() -> shipping.ship("o-yml")).isInstanceOf(LockNotAcquiredException.class);
        }
        assertThat(shipping.ship("o-yml")).isPositive();
    }

    /**
     * One family of names, each measure once: the timers and long-task timers come from dlock's observations through
     * Boot's meter observation handler (hence their {@code error} tag), the counters and gauges from dlock; no filter
     * hides a second family, and the timers publish histogram buckets without any setting.
     */
    @Test
    void metersHaveExactlyTheseNamesTagsAndDescriptions() throws Exception {
        shipping.ship("o-meters");
        try (HeldOrder held = HeldOrder.hold(shipping, "o-meters-held")) {
            assertThatThrownBy(() -> shipping.ship("o-meters-held")).isInstanceOf(LockNotAcquiredException.class);
            assertThat(meterRegistry.get(LockMetrics.HOLD_ACTIVE).tag(LockMetrics.TAG_LOCK_NAME, "orders").longTaskTimer()
                    .activeTasks()).isEqualTo(1);
        }
        assertThat(meterRegistry.get(LockMetrics.HOLD_ACTIVE).tag(LockMetrics.TAG_LOCK_NAME, "orders").longTaskTimer()
                .activeTasks()).as("back to 0 once released").isZero();

        Map<String, Set<Set<String>>> tagKeysByName = new TreeMap<>();
        for (Meter meter : meterRegistry.getMeters()) {
            Meter.Id id = meter.getId();
            if (id.getName().startsWith("dlock.")) {
                assertThat(id.getDescription()).as("description of %s", id.getName()).isNotBlank();
                assertThat(id.getTags()).extracting(Tag::getValue).doesNotContain("o-meters", "o-meters-held");
                tagKeysByName.computeIfAbsent(id.getName(), name -> new java.util.HashSet<>())
                        .add(id.getTags().stream().map(Tag::getKey).collect(Collectors.toSet()));
            }
        }
        assertThat(tagKeysByName).containsOnly(
                Map.entry("dlock.lock.acquire", Set.of(Set.of("lock.name", "result", "error"))),
                Map.entry("dlock.lock.acquire.active", Set.of(Set.of("lock.name"))),
                Map.entry("dlock.lock.hold", Set.of(Set.of("lock.name", "error"))),
                Map.entry("dlock.lock.hold.active", Set.of(Set.of("lock.name"))),
                Map.entry("dlock.lock.lease.lost", Set.of(Set.of("lock.name"))),
                Map.entry("dlock.watchdog.renewals", Set.of(Set.of("result"))),
                Map.entry("dlock.watchdog.leases", Set.of(Set.of())),
                Map.entry("dlock.watchdog.stalled", Set.of(Set.of())));
        assertThat(meterRegistry.get(LockMetrics.ACQUIRE).tag(LockMetrics.TAG_LOCK_NAME, "orders").timers())
                .extracting(timer -> timer.getId().getTag(LockMetrics.TAG_RESULT))
                .containsExactlyInAnyOrder("acquired", "timeout");
        assertThat(meterRegistry.get(LockMetrics.RENEWALS).counters())
                .extracting(counter -> counter.getId().getTag(LockMetrics.TAG_RESULT))
                .containsExactlyInAnyOrder("renewed", "lost", "error");

        String scrape = get("/actuator/prometheus").body();
        assertThat(scrape)
                .contains("# HELP dlock_lock_acquire_seconds " + LockMetrics.ACQUIRE_DESCRIPTION)
                .containsPattern("dlock_lock_acquire_seconds_count\\{error=\"none\",lock_name=\"orders\",result=\"acquired\"} [1-9]")
                .containsPattern("dlock_lock_acquire_seconds_count\\{error=\"none\",lock_name=\"orders\",result=\"timeout\"} [1-9]")
                .contains("dlock_lock_acquire_seconds_bucket{error=\"none\",lock_name=\"orders\",result=\"acquired\",le=")
                .containsPattern("dlock_lock_hold_seconds_count\\{error=\"none\",lock_name=\"orders\"} [1-9]")
                .contains("dlock_lock_hold_seconds_bucket{error=\"none\",lock_name=\"orders\",le=")
                // A long-task timer's _count is the number of tasks running now (here none: released).
                .contains("dlock_lock_hold_active_seconds_count{lock_name=\"orders\"} 0")
                .contains("dlock_watchdog_renewals_total{result=\"renewed\"}")
                .contains("dlock_lock_lease_lost_total{lock_name=\"orders\"} 0")
                .contains("dlock_watchdog_leases ")
                .contains("dlock_watchdog_stalled 0")
                .doesNotContain("dlock_acquire_").doesNotContain("dlock_held_").doesNotContain("dlock_active")
                .doesNotContain("o-meters");
    }

    @Test
    void endpointListsAHeldLock() throws Exception {
        try (HeldOrder held = HeldOrder.hold(shipping, "o-endpoint"); Jedis admin = REDIS.admin()) {
            HttpResponse<String> response = get("/actuator/dlock");
            assertThat(response.statusCode()).isEqualTo(200);
            String body = response.body();
            List<Map<String, Object>> locks = JsonPath.read(body, "$.locks[?(@.key == 'orders:o-endpoint')]");
            assertThat(locks).hasSize(1);
            Map<String, Object> lock = locks.get(0);
            assertThat(lock).containsEntry("name", "orders")
                    .containsEntry("holderThread", held.threadName)
                    .containsEntry("watchdogManaged", true)
                    .containsEntry("state", "HELD")
                    .containsKeys("heldFor", "heldForMillis", "leaseExpiresIn", "leaseExpiresInMillis", "renewals");
            // The holder never asked for its token, which Redis issues on request: the endpoint says so, and reading it
            // issues none (a GET writes nothing to the store).
            assertThat(lock).containsEntry("fencingToken", null);
            assertThat(admin.exists("shop:{orders:o-endpoint}:fence")).as("a fencing counter written for the key").isFalse();
            assertThat(((Number) lock.get("leaseExpiresInMillis")).longValue()).isBetween(1L, 3000L);
        }
        assertThat(get("/actuator/dlock").body()).doesNotContain("o-endpoint");
    }

    @Test
    void healthGoesDownWithRedisAndUpWhenItReturns() throws Exception {
        HttpResponse<String> up = get("/actuator/health/dlock");
        assertThat(up.statusCode()).isEqualTo(200);
        assertThat(JsonPath.<String>read(up.body(), "$.status")).isEqualTo("UP");
        assertThat(JsonPath.<Object>read(up.body(), "$.details.pingMillis")).isNotNull();
        assertThat(JsonPath.<Integer>read(up.body(), "$.details.watchdogStalledCalls")).isZero();

        REDIS.kill();
        try {
            HttpResponse<String> down = get("/actuator/health/dlock");
            assertThat(down.statusCode()).isEqualTo(503);
            assertThat(JsonPath.<String>read(down.body(), "$.status")).isEqualTo("DOWN");
            assertThat(JsonPath.<String>read(down.body(), "$.details.error")).contains("LockBackendException");
            assertThat(get("/actuator/health").statusCode()).isEqualTo(503);
        } finally {
            REDIS.restart();
        }
        awaitHealth("UP", Duration.ofSeconds(10));
    }

    private void awaitHealth(String status, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        String body;
        do {
            body = get("/actuator/health/dlock").body();
            if (status.equals(JsonPath.read(body, "$.status"))) {
                return;
            }
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        throw new AssertionError("health did not become " + status + " within " + timeout + ": " + body);
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET().build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }

    /** Holds {@code orders:<id>} through the locked service method on another thread until closed. */
    private static final class HeldOrder implements AutoCloseable {

        private final ExecutorService thread;
        private final CountDownLatch release = new CountDownLatch(1);
        private final Future<?> call;
        private final String threadName;

        private HeldOrder(ShippingService shipping, String orderId) throws InterruptedException {
            String name = "holder-" + orderId;
            this.threadName = name;
            this.thread = Executors.newSingleThreadExecutor(task -> new Thread(task, name));
            CountDownLatch entered = new CountDownLatch(1);
            this.call = thread.submit(() -> {
                shipping.holdUntil(orderId, entered, release);
                return null;
            });
            if (!entered.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the locked method was not entered");
            }
        }

        static HeldOrder hold(ShippingService shipping, String orderId) throws InterruptedException {
            return new HeldOrder(shipping, orderId);
        }

        @Override
        public void close() throws Exception {
            release.countDown();
            call.get(10, TimeUnit.SECONDS);
            thread.shutdown();
        }
    }
}
