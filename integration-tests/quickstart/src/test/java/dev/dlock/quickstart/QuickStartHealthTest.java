package dev.dlock.quickstart;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's note on health: with the quick start's YAML plus
 * {@code management.endpoint.health.show-components=always}, {@code /actuator/health/dlock} answers
 * with dlock's own status (without it, QuickStartTest shows, that page is not found).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.config.name=quickstart", "management.endpoint.health.show-components=always"})
class QuickStartHealthTest {

    private static final RedisServerProcess REDIS = RedisServerProcess.start();

    @LocalServerPort
    private int port;

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", REDIS::uri);
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void withShowComponentsTheDlockHealthComponentAnswers() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + "/actuator/health/dlock"))
                .timeout(Duration.ofSeconds(10)).GET().build();
        HttpResponse<String> health = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(health.statusCode()).as(health.body()).isEqualTo(200);
        assertThat(JsonPath.<String>read(health.body(), "$.status")).isEqualTo("UP");
    }
}
