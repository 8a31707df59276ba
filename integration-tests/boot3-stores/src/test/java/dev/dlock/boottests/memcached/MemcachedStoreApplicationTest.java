package dev.dlock.boottests.memcached;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.memcached.MemcachedLockBackend;
import dev.dlock.memcached.MemcachedServerExtension;
import dev.dlock.testkit.Concurrently;
import dev.dlock.testkit.OverlapDetector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Spring Boot 3.5 application with dlock-memcached-spring-boot3-starter against a memcached this test starts:
 * the annotated method locks without overlap, the startup line says the store is efficiency only, and the
 * actuator lists a held lock and reports the store's health. The application is started inside the test, after
 * the harness found memcached (where it did not, the test is skipped saying how to install it).
 */
@ExtendWith(OutputCaptureExtension.class)
class MemcachedStoreApplicationTest {

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void annotatedMethodLocksInMemcachedAndTheActuatorShowsItsLocksAndHealth(CapturedOutput output) throws Exception {
        String servers = memcached.server().address();
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(ReportApplication.class).properties(
                "server.port=0",
                "dlock.store=memcached",
                "dlock.memcached.servers=" + servers,
                "management.endpoints.web.exposure.include=health,dlock",
                "management.endpoint.health.show-details=always").run()) {
            assertThat(SpringBootVersion.getVersion()).as("Spring Boot line of this module").startsWith("3.5.");
            assertThat(context.getBean(LockBackend.class)).isInstanceOf(MemcachedLockBackend.class);
            assertThat(output.getAll()).contains("dlock locks in memcached [" + servers + "]: efficiency only, never for correctness");

            ReportApplication.Reports reports = context.getBean(ReportApplication.Reports.class);
            OverlapDetector overlaps = context.getBean(OverlapDetector.class);
            Concurrently.run(6, 25, Duration.ofSeconds(60), () -> reports.refresh("daily"));
            assertThat(overlaps.overlaps()).as("threads inside the locked section together").isZero();
            assertThat(overlaps.counter()).as("no refresh lost").isEqualTo(6 * 25);

            int port = ((WebServerApplicationContext) context).getWebServer().getPort();
            ExecutorService holder = Executors.newSingleThreadExecutor();
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            try {
                Future<?> held = holder.submit(() -> {
                    reports.holdUntil("held", entered, release);
                    return null;
                });
                assertThat(entered.await(10, TimeUnit.SECONDS)).as("the holder entered").isTrue();
                assertThat(get(port, "/actuator/dlock")).contains("report:held");
                release.countDown();
                held.get(10, TimeUnit.SECONDS);
            } finally {
                release.countDown();
                holder.shutdownNow();
            }
            assertThat(get(port, "/actuator/health")).contains("\"dlock\":{\"status\":\"UP\"");
        }
    }

    private static String get(int port, String path) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).timeout(Duration.ofSeconds(10)).GET().build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as("status of %s", path).isEqualTo(200);
        return response.body();
    }
}
