package dev.dlock.boottests;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.boot.DistributedLockProperties;
import dev.dlock.boot.RedisStoreProperties;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.Concurrently;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisDataException;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The application on this module's Spring Boot line, configured by application.yml, against a real
 * redis-server where dlock logs in as an ACL user limited to dlock's keys and channels: locking
 * (waiters woken by release notices, leases renewed), the {@code dlock} endpoint, health and the
 * Prometheus scrape; the user's password appears in no log line and no actuator answer.
 */
@ExtendWith(OutputCaptureExtension.class)
// Spring Boot's tests switch metrics export off unless asked; the Prometheus scrape is part of what is tested.
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.test.observability.auto-configure=true", "management.defaults.metrics.export.enabled=true"})
class StockApplicationTest {

    /** The user's password: distinctive, so that any leak of it is found by a plain search. */
    static final String PASSWORD = "pw-4f9c1e7d-never-logged";

    /**
     * The ACL rules of the README's {@code ACL SETUSER dlock-user ...} line: dlock's keys and channels
     * only, and only the commands dlock sends or its scripts run (Redis checks those too).
     */
    static final String ACL_RULES = "on >" + PASSWORD + " resetkeys ~dlock:* resetchannels &dlock:* -@all"
            + " +eval +evalsha +get +set +del +pexpire +pttl +time +publish +subscribe +unsubscribe +ping +info +wait";

    private static final RedisServerProcess REDIS = RedisServerProcess.start(aclUser("dlockapp"));
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** The redis-server options that create {@code user} with {@link #ACL_RULES}, one argument per rule. */
    static List<String> aclUser(String user) {
        List<String> options = new ArrayList<>(List.of("--user", user));
        options.addAll(List.of(ACL_RULES.split(" ")));
        return options;
    }

    @LocalServerPort
    private int port;

    @Autowired
    private StockService stock;

    @Autowired
    private OverlapDetector overlaps;

    @Autowired
    private LockManager lockManager;

    @Autowired
    private DistributedLockProperties properties;

    @Autowired
    private RedisStoreProperties redisProperties;

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", REDIS::uri);
        registry.add("dlock.redis.password", () -> PASSWORD);
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void concurrentCallsNeverOverlap() throws Exception {
        int threads = 6;
        int calls = 15;
        int before = overlaps.counter();
        Concurrently.run(threads, calls, Duration.ofSeconds(60), () -> stock.reserve("sku-1"));
        assertThat(overlaps.overlaps()).as("threads inside the locked section together").isZero();
        assertThat(overlaps.counter() - before).as("no reservation lost").isEqualTo(threads * calls);
    }

    @Test
    void endpointHealthAndScrapeOnThisBootLine() throws Exception {
        try (Held held = Held.hold(stock, "sku-held")) {
            // The lease (2s) is renewed by the watchdog while the method runs.
            awaitTrue(() -> lockManager.admin().heldLocks().stream().anyMatch(lock -> lock.renewals() >= 2));
            HttpResponse<String> endpoint = get("/actuator/dlock");
            assertThat(endpoint.statusCode()).isEqualTo(200);
            List<Map<String, Object>> locks = JsonPath.read(endpoint.body(), "$.locks[?(@.key == 'stock:sku-held')]");
            assertThat(locks).hasSize(1);
            assertThat(locks.get(0)).containsEntry("name", "stock").containsEntry("state", "HELD");
            assertThat(endpoint.body()).doesNotContain(PASSWORD);
        }

        HttpResponse<String> health = get("/actuator/health/dlock");
        assertThat(health.statusCode()).isEqualTo(200);
        assertThat(JsonPath.<String>read(health.body(), "$.status")).isEqualTo("UP");
        assertThat(health.body()).doesNotContain(PASSWORD);

        stock.reserve("sku-scrape");
        String scrape = get("/actuator/prometheus").body();
        assertThat(scrape)
                .containsPattern("dlock_lock_acquire_seconds_count\\{error=\"none\",lock_name=\"stock\",result=\"acquired\"} [1-9]")
                .containsPattern("dlock_watchdog_renewals_total\\{result=\"renewed\"} [1-9]")
                .contains("dlock_watchdog_stalled 0");
    }

    @Test
    void waiterIsWokenWhenTheHolderReleases() throws Exception {
        Held held = Held.hold(stock, "sku-wait");
        CountDownLatch waiting = new CountDownLatch(1);
        ExecutorService waiter = Executors.newSingleThreadExecutor();
        try {
            Future<?> second = waiter.submit(() -> {
                waiting.countDown();
                stock.reserve("sku-wait");
                return null;
            });
            assertThat(waiting.await(10, TimeUnit.SECONDS)).isTrue();
            held.close();
            second.get(10, TimeUnit.SECONDS);
        } finally {
            waiter.shutdownNow();
        }
    }

    @Test
    void theAclUserIsRefusedAKeyOutsideDlocksPrefix() {
        try (Jedis asDlockUser = new Jedis(new HostAndPort(REDIS.host(), REDIS.port()),
                DefaultJedisClientConfig.builder().user("dlockapp").password(PASSWORD).build())) {
            asDlockUser.set("dlock:{probe}", "allowed");
            assertThatThrownBy(() -> asDlockUser.set("orders:42", "x"))
                    .isInstanceOf(JedisDataException.class).hasMessageContaining("NOPERM");
        }
    }

    @Test
    void passwordAppearsInNoLogLineAndNoToString(CapturedOutput output) throws Exception {
        stock.reserve("sku-log");
        assertThat(output.getAll()).as("captured log").contains("dlock connects to Redis").doesNotContain(PASSWORD);
        assertThat(properties.toString()).doesNotContain(PASSWORD);
        assertThat(redisProperties.toString()).doesNotContain(PASSWORD);
        assertThat(SpringBootVersion.getVersion()).as("Spring Boot line of this module")
                .startsWith(System.getProperty("dlock.expected.boot.line", ""));
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 10 s");
            }
            Thread.sleep(20);
        }
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET().build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }

    /** Holds {@code stock:<sku>} through the locked method on another thread until closed. */
    private static final class Held implements AutoCloseable {

        private final ExecutorService thread = Executors.newSingleThreadExecutor();
        private final CountDownLatch release = new CountDownLatch(1);
        private final Future<?> call;

        private Held(StockService stock, String sku) throws InterruptedException {
            CountDownLatch entered = new CountDownLatch(1);
            call = thread.submit(() -> {
                stock.holdUntil(sku, entered, release);
                return null;
            });
            if (!entered.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the holder did not get " + sku);
            }
        }

        static Held hold(StockService stock, String sku) throws InterruptedException {
            return new Held(stock, sku);
        }

        @Override
        public void close() throws Exception {
            release.countDown();
            call.get(10, TimeUnit.SECONDS);
            thread.shutdownNow();
        }
    }
}
