package dev.dlock.boot.web;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
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
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a web client gets for a busy lock, the same on Spring MVC and WebFlux: 409 Conflict as a problem detail naming
 * the lock (not the key), Retry-After after a wait, nothing logged at ERROR; the application's own exception handler
 * wins; a lost lease stays a 500. The key is held by another thread of the application's own lock manager (the
 * in-memory store), for the whole call.
 */
@ExtendWith(OutputCaptureExtension.class)
abstract class LockBusyAnswerContract {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @LocalServerPort
    int port;

    @Autowired
    LockManager lockManager;

    /** The path prefix of this stack's controllers: "" for the blocking ones, "/reactive" for the Mono ones. */
    abstract String prefix();

    @Test
    void aBusyLockAnswers409AsAProblemDetailNamingTheLockWithRetryAfterAndNoErrorLogged(CapturedOutput output) throws Exception {
        try (LockHandle held = holdOn(ReportService.REPORTS + ":r-1")) {
            HttpResponse<String> response = get(prefix() + "/reports/r-1");

            assertThat(response.statusCode()).as(response.body()).isEqualTo(409);
            assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type).startsWith("application/problem+json"));
            assertThat(response.headers().firstValue("Retry-After")).as("the call waited 300 ms").hasValue("1");
            String body = response.body();
            assertThat(JsonPath.<Integer>read(body, "$.status")).isEqualTo(409);
            assertThat(JsonPath.<String>read(body, "$.lock")).isEqualTo(ReportService.REPORTS);
            assertThat(JsonPath.<String>read(body, "$.reason")).isEqualTo("TIMEOUT");
            assertThat(JsonPath.<String>read(body, "$.detail")).contains("'reports'").contains("try again later");
            assertThat(JsonPath.<String>read(body, "$.instance")).isEqualTo(prefix() + "/reports/r-1");
            assertThat(body).as("the key is not the client's to see").doesNotContain("reports:r-1").doesNotContain("\"key\"");
            assertThat(held.isHeld()).isTrue();
        }
        assertThat(output.getAll()).as("a busy lock is no server error").doesNotContain("ERROR").doesNotContain("LockNotAcquiredException");
    }

    @Test
    void withoutAWaitThereIsNoRetryAfter() throws Exception {
        try (LockHandle held = holdOn(ReportService.REPORTS + ":r-2")) {
            HttpResponse<String> response = get(prefix() + "/reports/r-2/now");

            assertThat(response.statusCode()).as(response.body()).isEqualTo(409);
            assertThat(response.headers().firstValue("Retry-After")).isEmpty();
            assertThat(held.isHeld()).isTrue();
        }
    }

    @Test
    void theApplicationsOwnExceptionHandlerWins() throws Exception {
        try (LockHandle held = holdOn(ReportService.INVOICES + ":i-1")) {
            HttpResponse<String> response = get(prefix() + "/invoices/i-1");

            assertThat(response.statusCode()).as(response.body()).isEqualTo(423);
            assertThat(response.body()).isEqualTo(InvoiceAdvice.BODY);
            assertThat(held.isHeld()).isTrue();
        }
    }

    @Test
    void aLostLeaseStaysAServerError() throws Exception {
        HttpResponse<String> response = get(prefix() + "/reports/r-3/lost");

        assertThat(response.statusCode()).as(response.body()).isEqualTo(500);
        assertThat(response.body()).doesNotContain("problem+json");
    }

    @Test
    void aFreeLockRunsTheCall() throws Exception {
        HttpResponse<String> response = get(prefix() + "/reports/r-4");

        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.body()).isEqualTo("report r-4");
    }

    HttpResponse<String> get(String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .header("Accept", "application/json").timeout(Duration.ofSeconds(10)).GET().build();
        return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    }

    /** {@code key} taken by another thread of this application, under the name the calls use. */
    LockHandle holdOn(String key) throws InterruptedException {
        AtomicReference<LockHandle> handle = new AtomicReference<>();
        Thread thread = new Thread(() -> handle.set(lockManager.acquire(LockRequest.builder(key)
                .name(key.substring(0, key.indexOf(':'))).build())), "other-caller");
        thread.start();
        thread.join(10_000);
        assertThat(handle.get()).as("another caller holds %s", key).isNotNull();
        return handle.get();
    }
}
