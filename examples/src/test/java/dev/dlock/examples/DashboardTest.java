package dev.dlock.examples;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
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
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** Every metric the Grafana dashboard queries exists in the example's own Prometheus scrape. */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"flashsale.payment-time=500ms", "dlock.lease-time=300ms"})
class DashboardTest {

    private static final Pattern METRIC = Pattern.compile("\\bdlock_[a-z_]+");
    private static final Pattern SAMPLE_NAME = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)", Pattern.MULTILINE);

    private static final RedisServerProcess redis = RedisServerProcess.start();

    @LocalServerPort
    private int port;

    private final HttpClient http = HttpClient.newHttpClient();

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", redis::uri);
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @Test
    void everyDashboardQueryNamesAScrapedMetric() throws Exception {
        call("PUT", "/products/sku-dash/stock?quantity=3", null);
        String order = "{\"orderId\":\"o-%d\",\"productId\":\"sku-dash\",\"buyer\":\"b\"}";
        assertThat(call("POST", "/orders", order.formatted(1)).body()).contains("SOLD");
        assertThat(call("POST", "/orders/async", order.formatted(2)).body()).contains("SOLD");
        assertThat(call("POST", "/orders/programmatic", order.formatted(3)).body()).contains("SOLD");
        assertThat(call("POST", "/orders", order.formatted(4)).statusCode()).as("sold out: aborted").isEqualTo(409);

        String scrape = call("GET", "/actuator/prometheus", null).body();
        Set<String> scraped = new TreeSet<>();
        Matcher sample = SAMPLE_NAME.matcher(scrape);
        while (sample.find()) {
            scraped.add(sample.group(1));
        }
        List<String> queries = dashboardQueries();
        assertThat(queries).hasSizeGreaterThanOrEqualTo(9);
        Set<String> queried = queries.stream().flatMap(q -> METRIC.matcher(q).results().map(m -> m.group()))
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(queried).contains("dlock_acquire_seconds_count", "dlock_acquire_seconds_bucket", "dlock_held_seconds_sum",
                "dlock_active", "dlock_renewals_total", "dlock_lease_lost_total", "dlock_watchdog_leases", "dlock_held_seconds_max",
                "dlock_acquire_seconds_sum");
        assertThat(scraped).as("metrics in the scrape").containsAll(queried);
    }

    private static List<String> dashboardQueries() throws Exception {
        JsonNode dashboard = new ObjectMapper().readTree(Path.of("grafana/dlock-dashboard.json").toFile());
        List<String> queries = new ArrayList<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                queries.add(target.path("expr").asText());
            }
        }
        for (JsonNode variable : dashboard.path("templating").path("list")) {
            if (variable.path("type").asText().equals("query")) {
                queries.add(variable.path("query").asText());
            }
        }
        return queries;
    }

    private HttpResponse<String> call(String method, String path, String json) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
        request.method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) {
            request.header("Content-Type", "application/json");
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
