package dev.dlock.boot.observation;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

import dev.dlock.annotation.DistributedLock;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import reactor.core.publisher.Mono;

/**
 * dlock's spans in a real web application traced by OpenTelemetry: Boot's tracing auto-configuration over
 * micrometer-tracing-bridge-otel, every span sampled and exported to the SDK's {@link InMemorySpanExporter}, the
 * in-memory lock store. Each endpoint is called over HTTP on Spring MVC and on WebFlux; the exported trace then shows
 * the request's server span with two children, {@code dlock acquire ledger} and {@code dlock hold ledger}, tagged as
 * docs/observability.md says, and a hold that lasts as long as the locked work — for a {@code CompletableFuture} or a
 * {@code Mono}, until the asynchronous result completes, not when the method returns. Run on Boot 4.1 and 3.5.
 */
class LockTracingOtelTest {

    /** How long each locked call works: the hold span lasts at least this long. */
    static final Duration WORK = Duration.ofMillis(200);

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private static final AttributeKey<String> LOCK_NAME = AttributeKey.stringKey("lock.name");
    private static final AttributeKey<String> LOCK_KEY = AttributeKey.stringKey("lock.key");
    private static final AttributeKey<String> RESULT = AttributeKey.stringKey("result");
    private static final AttributeKey<String> FENCING_TOKEN = AttributeKey.stringKey("fencing.token");

    private static ConfigurableApplicationContext mvc;
    private static ConfigurableApplicationContext webFlux;

    /** The locked service: one lock name, a key per ledger; blocking, {@code CompletableFuture} and {@code Mono}. */
    public static class Ledger {

        @DistributedLock(name = "ledger", key = "#id")
        public String post(String id) throws InterruptedException {
            Thread.sleep(WORK.toMillis());
            return "posted " + id;
        }

        @DistributedLock(name = "ledger", key = "#id")
        public CompletableFuture<String> postLater(String id) {
            return CompletableFuture.supplyAsync(() -> "posted " + id,
                    CompletableFuture.delayedExecutor(WORK.toMillis(), TimeUnit.MILLISECONDS));
        }

        @DistributedLock(name = "ledger", key = "#id")
        public Mono<String> postReactive(String id) {
            return Mono.delay(WORK).map(ignored -> "posted " + id);
        }
    }

    /** The same controller on both stacks. */
    @RestController
    static class LedgerController {
        private final Ledger ledger;

        LedgerController(Ledger ledger) {
            this.ledger = ledger;
        }

        @GetMapping("/ledger/{id}")
        String post(@PathVariable("id") String id) throws InterruptedException {
            return ledger.post(id);
        }

        @GetMapping("/ledger/{id}/later")
        CompletableFuture<String> postLater(@PathVariable("id") String id) {
            return ledger.postLater(id);
        }

        @GetMapping("/ledger/{id}/reactive")
        Mono<String> postReactive(@PathVariable("id") String id) {
            return ledger.postReactive(id);
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import({Ledger.class, LedgerController.class})
    static class LedgerApplication {
        /** Boot's tracing auto-configuration exports to every SpanExporter bean. */
        @Bean
        InMemorySpanExporter spanExporter() {
            return InMemorySpanExporter.create();
        }
    }

    @BeforeAll
    static void start() {
        mvc = start(WebApplicationType.SERVLET);
        webFlux = start(WebApplicationType.REACTIVE);
    }

    @AfterAll
    static void stop() {
        if (mvc != null) {
            mvc.close();
        }
        if (webFlux != null) {
            webFlux.close();
        }
    }

    /**
     * Not a {@code @SpringBootTest}: Boot's test support would switch tracing off. WebFlux keeps the request's
     * observation in the Reactor context; {@code spring.reactor.context-propagation=auto} makes it current on the thread
     * that calls the locked method (without it, dlock's spans there start traces of their own).
     */
    private static ConfigurableApplicationContext start(WebApplicationType type) {
        return new SpringApplicationBuilder(LedgerApplication.class).web(type).properties(
                "server.port=0",
                "dlock.store=in-memory",
                "management.tracing.sampling.probability=1.0",
                "spring.main.banner-mode=off",
                "spring.reactor.context-propagation=" + (type == WebApplicationType.REACTIVE ? "auto" : "limited")).run();
    }

    @Test
    void aBlockingCallOnMvcShowsAcquireAndHoldUnderTheServerSpan() throws Exception {
        assertTrace(mvc, "/ledger/{id}", "mvc-1");
    }

    @Test
    void aCompletableFutureOnMvcHoldsUntilTheFutureCompletes() throws Exception {
        assertTrace(mvc, "/ledger/{id}/later", "mvc-2");
    }

    @Test
    void aMonoOnMvcHoldsUntilTheMonoCompletes() throws Exception {
        assertTrace(mvc, "/ledger/{id}/reactive", "mvc-3");
    }

    @Test
    void aMonoOnWebFluxHoldsUntilTheMonoCompletes() throws Exception {
        assertTrace(webFlux, "/ledger/{id}/reactive", "flux-1");
    }

    @Test
    void aCompletableFutureOnWebFluxHoldsUntilTheFutureCompletes() throws Exception {
        assertTrace(webFlux, "/ledger/{id}/later", "flux-2");
    }

    /** Calls {@code route} for ledger {@code id} and checks the trace its request left. */
    private static void assertTrace(ConfigurableApplicationContext app, String route, String id) throws Exception {
        String port = app.getEnvironment().getProperty("local.server.port");
        HttpResponse<String> response = HTTP.send(HttpRequest.newBuilder(
                URI.create("http://localhost:" + port + route.replace("{id}", id))).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("posted " + id);

        Trace trace = awaitTrace(app, "ledger:" + id);
        SpanData server = trace.server;
        SpanData acquire = trace.acquire;
        SpanData hold = trace.hold;
        assertThat(server.getKind()).isEqualTo(SpanKind.SERVER);
        assertThat(server.getName()).isEqualTo("http get " + route);
        assertThat(List.of(acquire, hold)).allSatisfy(span -> {
            assertThat(span.getTraceId()).as("trace of " + span.getName()).isEqualTo(server.getTraceId());
            assertThat(span.getParentSpanId()).as("parent of " + span.getName()).isEqualTo(server.getSpanId());
            assertThat(span.getKind()).isEqualTo(SpanKind.INTERNAL);
            assertThat(span.getAttributes().get(LOCK_NAME)).isEqualTo("ledger");
            assertThat(span.getAttributes().get(LOCK_KEY)).isEqualTo("ledger:" + id);
            assertThat(span.getAttributes().get(FENCING_TOKEN)).as("the in-memory store issues the token with the lock")
                    .matches("\\d+");
            assertThat(span.getStartEpochNanos()).isGreaterThanOrEqualTo(server.getStartEpochNanos());
            assertThat(span.getEndEpochNanos()).isLessThanOrEqualTo(server.getEndEpochNanos());
        });
        assertThat(acquire.getName()).isEqualTo("dlock acquire ledger");
        assertThat(acquire.getAttributes().get(RESULT)).isEqualTo("acquired");
        assertThat(hold.getName()).isEqualTo("dlock hold ledger");
        assertThat(hold.getAttributes().get(RESULT)).isNull();
        assertThat(List.of(acquire, hold)).as("error is a meter tag; a span shows an error by its status")
                .allSatisfy(span -> assertThat(span.getAttributes().get(AttributeKey.stringKey("error"))).isNull());
        assertThat(hold.getStartEpochNanos()).as("the hold starts when the acquisition ends")
                .isGreaterThanOrEqualTo(acquire.getEndEpochNanos());
        assertThat(Duration.ofNanos(hold.getEndEpochNanos() - hold.getStartEpochNanos()))
                .as("the hold lasts as long as the locked work").isGreaterThanOrEqualTo(WORK);

        assertThat(app.getBean(MeterRegistry.class).getMeters()).as("the key is never a meter tag")
                .filteredOn(meter -> meter.getId().getName().startsWith("dlock."))
                .isNotEmpty()
                .allSatisfy(meter -> assertThat(meter.getId().getTags()).noneMatch(tag -> tag.getValue().contains(id)));
    }

    private record Trace(SpanData server, SpanData acquire, SpanData hold) {
    }

    /**
     * Waits until the acquire and hold spans of {@code key} and their parent are exported: the server span ends after
     * the response is sent, and an asynchronous hold after the locked work completes.
     */
    private static Trace awaitTrace(ConfigurableApplicationContext app, String key) throws InterruptedException {
        InMemorySpanExporter exporter = app.getBean(InMemorySpanExporter.class);
        SdkTracerProvider tracerProvider = app.getBean(SdkTracerProvider.class);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<SpanData> spans;
        do {
            tracerProvider.forceFlush().join(5, TimeUnit.SECONDS);
            spans = exporter.getFinishedSpanItems();
            List<SpanData> exported = spans;
            Optional<SpanData> acquire = find(spans, "dlock acquire ledger", key);
            Optional<SpanData> hold = find(spans, "dlock hold ledger", key);
            Optional<SpanData> server = acquire.flatMap(span -> exported.stream()
                    .filter(candidate -> candidate.getSpanId().equals(span.getParentSpanId())).findFirst());
            if (acquire.isPresent() && hold.isPresent() && server.isPresent()) {
                return new Trace(server.get(), acquire.get(), hold.get());
            }
            Thread.sleep(20);
        } while (System.nanoTime() < deadline);
        throw new AssertionError("no acquire and hold span of " + key + " with their parent exported in 10 s; exported: "
                + spans.stream().map(span -> span.getName() + " " + span.getAttributes() + " parent " + span.getParentSpanId()
                + " id " + span.getSpanId()).toList());
    }

    private static Optional<SpanData> find(List<SpanData> spans, String name, String key) {
        return spans.stream().filter(span -> name.equals(span.getName()) && key.equals(span.getAttributes().get(LOCK_KEY)))
                .findFirst();
    }
}
