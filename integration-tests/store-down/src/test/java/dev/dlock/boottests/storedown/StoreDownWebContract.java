package dev.dlock.boottests.storedown;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a web application sees when its lock store goes down, on a real embedded server and a real
 * HTTP client: the locked endpoint answers with a server error, never {@code 200} with an empty body,
 * the method does not run, and the failure is logged at ERROR. Each store's test stops the server it started.
 * The same source runs on Spring Boot 4.1 (spring-boot/boot4) and 3.5 (integration-tests/boot3-stores).
 */
@ExtendWith(OutputCaptureExtension.class)
abstract class StoreDownWebContract {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort
    private int port;

    @Autowired
    private OrderApplication.Shipping shipping;

    /** Stops the store's server the way it fails in production: the process is gone. */
    abstract void stopStore() throws Exception;

    @Test
    void aLockedCallWhileTheStoreIsDownAnswersAServerErrorAndLogsItAtError(CapturedOutput output) throws Exception {
        assertThat(get("/orders/1/ship").statusCode()).as("a locked call while the store is up").isEqualTo(200);
        int shipped = shipping.shipped();
        stopStore();

        HttpResponse<String> response = get("/orders/2/ship");

        assertThat(response.statusCode()).as("status of a locked call while the store is down (body: '%s')", response.body())
                .isBetween(500, 599);
        assertThat(shipping.shipped()).as("calls that ran the locked method").isEqualTo(shipped);
        assertThat(output.getAll()).as("the log").containsPattern("(?m)^\\S+ ERROR .*LockBackendException");
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(60)).GET().build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }
}
