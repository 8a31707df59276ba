package dev.dlock.boottests;

import org.springframework.boot.test.web.server.LocalServerPort;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** What the readiness tests share: calls to the application's health pages. */
abstract class ReadinessSupport {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort
    private int port;

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET().build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }

    int status(String path) throws IOException, InterruptedException {
        return get(path).statusCode();
    }

    /** Polls until {@code path} answers {@code expected}: the client's pool replaces its dead connections on use. */
    void awaitStatus(String path, int expected) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int last;
        while ((last = status(path)) != expected) {
            assertThat(System.nanoTime()).as("%s still answers %d", path, last).isLessThan(deadline);
            Thread.sleep(50);
        }
    }
}
