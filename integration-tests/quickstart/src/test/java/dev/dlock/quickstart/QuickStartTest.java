package dev.dlock.quickstart;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.testkit.Concurrently;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.xml.sax.InputSource;

import java.io.IOException;
import java.io.StringReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.parsers.DocumentBuilderFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's first screen, followed by a Boot user: a new application with exactly the README's
 * dependencies (this module's pom, compared with the README's block), the README's application.yml
 * (quickstart.yml, compared with the README's block) and its OrderService (compared word for word),
 * against a real redis-server. The one difference: the Redis URL points at the server this test starts
 * instead of localhost:6379.
 */
// Spring Boot's tests switch metrics export off unless asked; the Prometheus scrape is part of the quick start.
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.config.name=quickstart", "management.defaults.metrics.export.enabled=true"})
class QuickStartTest {

    private static final Path README = Path.of("../../README.md");
    private static final Path POM = Path.of("pom.xml");
    private static final Path SERVICE_SOURCE = Path.of("src/test/java/dev/dlock/quickstart/OrderService.java");
    private static final Path YAML = Path.of("src/test/resources/quickstart.yml");

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
    void theReadmeShowsThisApplicationsYamlAndService() throws IOException {
        String readme = Files.readString(README);
        assertThat(firstBlock(readme, "yaml")).as("README's application.yml").isEqualTo(Files.readString(YAML).strip());
        String source = Files.readString(SERVICE_SOURCE);
        String service = source.substring(source.indexOf("// README quick start: begin") + "// README quick start: begin".length(),
                source.indexOf("// README quick start: end")).strip();
        assertThat(firstBlock(readme, "java")).as("README's service").isEqualTo(service);
    }

    @Test
    void theReadmeListsExactlyThisApplicationsDependencies() throws Exception {
        Element pom = parseXml(Files.readString(POM));
        String projectVersion = child(child(pom, "parent"), "version").getTextContent();
        List<String> application = dependencies(child(pom, "dependencies")).stream()
                .filter(dependency -> !dependency.endsWith("@test"))
                .map(dependency -> dependency.replace("${project.version}", projectVersion))
                .toList();
        List<String> readme = dependencies(parseXml("<dependencies>" + firstBlock(Files.readString(README), "xml") + "</dependencies>"));
        assertThat(readme).as("README's dependencies (groupId:artifactId:version@scope)").isEqualTo(application);
    }

    @Test
    void callersOfOneOrderNeverOverlap() throws Exception {
        int threads = 4;
        int calls = 10;
        int before = shipping.overlaps.counter();
        Concurrently.run(threads, calls, Duration.ofSeconds(60), () -> orders.ship("42"));
        assertThat(shipping.overlaps.overlaps()).as("callers inside ship(\"42\") together").isZero();
        assertThat(shipping.overlaps.counter() - before).as("no shipment lost").isEqualTo(threads * calls);
    }

    @Test
    void theEndpointShowsTheHeldLockAndPrometheusItsAcquisitions() throws Exception {
        shipping.entered = new CountDownLatch(1);
        shipping.release = new CountDownLatch(1);
        ExecutorService caller = Executors.newSingleThreadExecutor();
        try {
            Future<?> held = caller.submit(() -> orders.ship("7"));
            assertThat(shipping.entered.await(10, TimeUnit.SECONDS)).isTrue();
            HttpResponse<String> endpoint = get("/actuator/dlock");
            assertThat(endpoint.statusCode()).isEqualTo(200);
            List<Map<String, Object>> locks = JsonPath.read(endpoint.body(), "$.locks[?(@.key == 'OrderService.ship:7')]");
            assertThat(locks).as(endpoint.body()).hasSize(1);
            assertThat(locks.get(0)).containsEntry("name", "OrderService.ship").containsEntry("state", "HELD");
            shipping.release.countDown();
            held.get(10, TimeUnit.SECONDS);
        } finally {
            shipping.release.countDown();
            caller.shutdownNow();
        }
        assertThat(get("/actuator/prometheus").body())
                .containsPattern("dlock_lock_acquire_seconds_count\\{error=\"none\",lock_name=\"OrderService.ship\",result=\"acquired\"} [1-9]")
                .contains("dlock_lock_hold_active_seconds_count{lock_name=\"OrderService.ship\"}");
        // The dlock contributor (a store ping) is part of the overall health; details need show-details.
        assertThat(JsonPath.<String>read(get("/actuator/health").body(), "$.status")).isEqualTo("UP");
    }

    @Test
    void withTheReadmesYamlTheDlockHealthComponentHasNoPageOfItsOwn() throws Exception {
        // The README says so: /actuator/health/dlock needs show-components (QuickStartHealthTest sets it).
        assertThat(get("/actuator/health/dlock").statusCode()).isEqualTo(404);
    }

    /** groupId:artifactId[:version][@scope] of each {@code <dependency>} directly under {@code dependencies}. */
    private static List<String> dependencies(Element dependencies) {
        List<String> coordinates = new ArrayList<>();
        for (Node node = dependencies.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element dependency && dependency.getTagName().equals("dependency")) {
                Element version = child(dependency, "version");
                Element scope = child(dependency, "scope");
                coordinates.add(child(dependency, "groupId").getTextContent() + ":" + child(dependency, "artifactId").getTextContent()
                        + (version == null ? "" : ":" + version.getTextContent())
                        + (scope == null ? "" : "@" + scope.getTextContent()));
            }
        }
        return coordinates;
    }

    private static Element parseXml(String xml) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder()
                .parse(new InputSource(new StringReader(xml))).getDocumentElement();
    }

    /** The first child element named {@code name}, or null. */
    private static Element child(Element parent, String name) {
        for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element element && element.getTagName().equals(name)) {
                return element;
            }
        }
        return null;
    }

    /** The body of the first fenced block of a language in the README. */
    private static String firstBlock(String markdown, String language) {
        Matcher block = Pattern.compile("```" + language + "\\n(.*?)\\n```", Pattern.DOTALL).matcher(markdown);
        assertThat(block.find()).as("a ```" + language + " block in the README").isTrue();
        return block.group(1).strip();
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET().build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }
}
