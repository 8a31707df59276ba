package dev.dlock.dashboard;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Grafana dashboard (examples/grafana/dlock-dashboard.json) against the README's quick start: an application with
 * the README's dependencies (this module's), its application.yml and its OrderService (both compared with the README),
 * scraped twice as Prometheus would, with locked calls in between and one lock held at the second scrape. Every
 * panel's query, and the instance variable's, must return data: a finite value for at least one series.
 */
// Spring Boot's tests switch metrics export off unless the registry's export is switched on (as on both Boot lines here);
// the Prometheus scrape is part of the quick start.
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.config.name=dashboard", "management.prometheus.metrics.export.enabled=true"})
class DashboardTest {

    private static final Path README = Path.of("../../README.md");
    private static final Path DASHBOARD = Path.of("../../examples/grafana/dlock-dashboard.json");
    private static final Path SERVICE_SOURCE = Path.of("../dashboard/src/test/java/dev/dlock/dashboard/OrderService.java");
    private static final Path YAML = Path.of("../dashboard/src/test/resources/dashboard.yml");
    private static final String MARK = "// README quick start: ";

    private static final RedisServerProcess REDIS = RedisServerProcess.start();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort
    private int port;

    @Autowired
    private OrderService orders;

    @Autowired
    private Shipping shipping;

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", REDIS::uri);
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void thisApplicationIsTheReadmes() throws IOException {
        String readme = Files.readString(README);
        assertThat(firstBlock(readme, "yaml")).as("README's application.yml").isEqualTo(Files.readString(YAML).strip());
        String source = Files.readString(SERVICE_SOURCE);
        String service = source.substring(source.indexOf(MARK + "begin") + (MARK + "begin").length(), source.indexOf(MARK + "end")).strip();
        assertThat(firstBlock(readme, "java")).as("README's service").isEqualTo(service);
    }

    @Test
    void everyPanelsQueryReturnsData() throws Exception {
        Map<String, String> queries = dashboardQueries();
        assertThat(queries).as("the dashboard's queries").hasSize(13);

        orders.ship("first");
        String before = get("/actuator/prometheus");
        long scrapedBefore = System.nanoTime();
        for (int i = 0; i < 5; i++) {
            orders.ship("order-" + i);
        }
        ExecutorService holder = Executors.newSingleThreadExecutor();
        String after;
        long scrapedAfter;
        shipping.entered = new CountDownLatch(1);
        shipping.release = new CountDownLatch(1);
        try {
            Future<?> held = holder.submit(() -> orders.ship("held"));
            assertThat(shipping.entered.await(10, TimeUnit.SECONDS)).as("the held call entered").isTrue();
            after = get("/actuator/prometheus");
            scrapedAfter = System.nanoTime();
            shipping.release.countDown();
            held.get(10, TimeUnit.SECONDS);
        } finally {
            shipping.release.countDown();
            holder.shutdownNow();
        }

        // The labels Prometheus adds to every series it scrapes from a target.
        Map<String, String> target = Map.of("instance", "127.0.0.1:" + port, "job", "dlock");
        PromQl prometheus = new PromQl(PromQl.scrape(before, target), PromQl.scrape(after, target),
                (scrapedAfter - scrapedBefore) / 1e9);
        Map<String, List<PromQl.Sample>> empty = new LinkedHashMap<>();
        queries.forEach((panel, query) -> {
            List<PromQl.Sample> result = prometheus.evaluate(query);
            if (result.stream().noneMatch(sample -> Double.isFinite(sample.value()))) {
                empty.put(panel + ": " + query, result);
            }
        });
        assertThat(empty).as("panels whose query returns no data on the quick start").isEmpty();
        assertThat(prometheus.evaluate(queries.get("Active locks"))).as("the lock held at the scrape")
                .singleElement().satisfies(sample -> assertThat(sample.value()).isEqualTo(1));
    }

    /** Each query of the dashboard, by its panel's title (numbered when a panel has several), and the variables'. */
    private static Map<String, String> dashboardQueries() throws IOException {
        String dashboard = Files.readString(DASHBOARD);
        Map<String, String> queries = new LinkedHashMap<>();
        List<Map<String, Object>> panels = JsonPath.read(dashboard, "$.panels[*]");
        for (Map<String, Object> panel : panels) {
            if (!panel.containsKey("targets")) {
                continue;
            }
            List<String> expressions = JsonPath.read(panel, "$.targets[*].expr");
            for (int i = 0; i < expressions.size(); i++) {
                queries.put(panel.get("title") + (expressions.size() > 1 ? " #" + (i + 1) : ""), expressions.get(i));
            }
        }
        List<Map<String, Object>> variables = JsonPath.read(dashboard, "$.templating.list[?(@.type == 'query')]");
        variables.forEach(variable -> queries.put("variable " + variable.get("name"), (String) variable.get("query")));
        return queries;
    }

    /** The body of the first fenced block of a language in the README. */
    private static String firstBlock(String markdown, String language) {
        Matcher block = Pattern.compile("```" + language + "\\n(.*?)\\n```", Pattern.DOTALL).matcher(markdown);
        assertThat(block.find()).as("a ```" + language + " block in the README").isTrue();
        return block.group(1).strip();
    }

    private String get(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET().build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as("GET %s", path).isEqualTo(200);
        return response.body();
    }
}
