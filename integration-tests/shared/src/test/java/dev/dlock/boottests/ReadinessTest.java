package dev.dlock.boottests;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With Spring Boot's availability probes on, the readiness group includes dlock's store check: an
 * instance whose lock store is gone reports "not ready" (503), so that a load balancer stops sending
 * it calls that would all fail on their lock, while liveness stays UP (a restart would not bring the
 * store back). The store is a redis-server this test starts, kills (SIGKILL) and restarts.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "management.endpoint.health.probes.enabled=true")
class ReadinessTest {

    private static final RedisServerProcess REDIS = RedisServerProcess.start(StockApplicationTest.aclUser("dlockapp"));
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort
    private int port;

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", REDIS::uri);
        registry.add("dlock.redis.password", () -> StockApplicationTest.PASSWORD);
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void readinessFollowsTheLockStoreAndLivenessDoesNot() throws Exception {
        assertThat(status("/actuator/health/readiness")).as("readiness while Redis answers").isEqualTo(200);

        REDIS.kill();
        assertThat(status("/actuator/health/readiness")).as("readiness with the lock store gone").isEqualTo(503);
        assertThat(status("/actuator/health/liveness")).as("liveness with the lock store gone").isEqualTo(200);

        REDIS.restart();
        awaitStatus("/actuator/health/readiness", 200);
    }

    private int status(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET().build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString()).statusCode();
    }

    /** Polls until {@code path} answers {@code expected}: the client's pool replaces its dead connections on use. */
    private void awaitStatus(String path, int expected) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int last;
        while ((last = status(path)) != expected) {
            assertThat(System.nanoTime()).as("%s still answers %d", path, last).isLessThan(deadline);
            Thread.sleep(50);
        }
    }
}
