package dev.dlock.boottests;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * By default readiness is the application's choice, as Spring Boot advises for external systems: with the lock store
 * gone, the instance stays ready (its endpoints that take no lock still work), while the {@code dlock} health
 * indicator reports the store DOWN in {@code /actuator/health}. Opting in: {@link ReadinessTest}.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "management.endpoint.health.probes.enabled=true")
class ReadinessByDefaultTest extends ReadinessSupport {

    private static final RedisServerProcess REDIS = RedisServerProcess.start(StockApplicationTest.aclUser("dlockapp"));

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
    void readinessIgnoresTheLockStoreUnlessTheApplicationOptsIn() throws Exception {
        assertThat(status("/actuator/health/readiness")).as("readiness while Redis answers").isEqualTo(200);

        REDIS.kill();
        HttpResponse<String> health = get("/actuator/health");
        assertThat(health.statusCode()).as("the dlock indicator reports the store: %s", health.body()).isEqualTo(503);
        assertThat(JsonPath.<String>read(health.body(), "$.components.dlock.status")).isEqualTo("DOWN");
        assertThat(status("/actuator/health/readiness")).as("readiness with the lock store gone").isEqualTo(200);
        assertThat(status("/actuator/health/liveness")).as("liveness with the lock store gone").isEqualTo(200);

        REDIS.restart();
        awaitStatus("/actuator/health", 200);
    }
}
