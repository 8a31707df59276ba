package dev.dlock.boottests.stores;

import dev.dlock.testkit.Concurrently;
import dev.dlock.testkit.OverlapDetector;
import org.springframework.boot.test.system.CapturedOutput;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** What both store applications check: exclusion under concurrent calls, and the actuator's answers. */
final class AppChecks {

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private AppChecks() {
    }

    /** {@code threads} threads post {@code calls} times each to one account: no overlap, no lost update. */
    static void postConcurrentlyWithoutOverlap(LedgerApplication.Ledger ledger, OverlapDetector overlaps, int threads,
                                               int calls) throws Exception {
        int before = overlaps.counter();
        Concurrently.run(threads, calls, Duration.ofSeconds(60), () -> ledger.post("acct-1"));
        assertThat(overlaps.overlaps()).as("threads inside the locked section together").isZero();
        assertThat(overlaps.counter() - before).as("no posting lost").isEqualTo(threads * calls);
    }

    /**
     * While {@code ledger:acct-held} is held: {@code /actuator/dlock} lists it; then {@code /actuator/health}
     * has dlock's entry; neither answer, nor the captured log, nor any of {@code moreTexts} contains {@code secret}.
     */
    static void assertSecretInNoActuatorAnswerAndNoLog(int port, LedgerApplication.Ledger ledger, CapturedOutput output,
                                                       String secret, String... moreTexts) throws Exception {
        String endpoint;
        try (Held held = new Held(ledger, "acct-held")) {
            endpoint = get(port, "/actuator/dlock");
            assertThat(endpoint).contains("ledger:acct-held");
        }
        String health = get(port, "/actuator/health");
        assertThat(health).contains("\"dlock\"");
        assertThat(List.of(endpoint, health, output.getAll())).allSatisfy(text -> assertThat(text).doesNotContain(secret));
        assertThat(moreTexts).allSatisfy(text -> assertThat(text).doesNotContain(secret));
    }

    /** The body of a GET on the application's port, after checking the status is 200. */
    static String get(int port, String path) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
                .timeout(Duration.ofSeconds(10)).GET().build();
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as("status of %s", path).isEqualTo(200);
        return response.body();
    }

    /** Holds {@code ledger:<account>} through the locked method on another thread until closed. */
    static final class Held implements AutoCloseable {

        private final ExecutorService thread = Executors.newSingleThreadExecutor();
        private final CountDownLatch release = new CountDownLatch(1);
        private final Future<?> call;

        Held(LedgerApplication.Ledger ledger, String account) throws InterruptedException {
            CountDownLatch entered = new CountDownLatch(1);
            call = thread.submit(() -> {
                ledger.holdUntil(account, entered, release);
                return null;
            });
            if (!entered.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the holder did not get " + account);
            }
        }

        @Override
        public void close() throws Exception {
            release.countDown();
            call.get(10, TimeUnit.SECONDS);
            thread.shutdownNow();
        }
    }
}
