package dev.dlock.boot.admin;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The endpoint with the forced release allowed ({@code management.endpoint.dlock.access=unrestricted}): who holds a key,
 * then an operator frees it and its holder is told; the key GET lists is the key GET and DELETE take.
 */
@SpringBootTest(classes = LockAdminApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "dlock.store=in-memory", "dlock.instance-id=shop-eu-1", "dlock.lease-time=3s", "dlock.on-lease-lost=throw",
        "management.endpoint.dlock.access=unrestricted", "management.endpoints.web.exposure.include=dlock"})
class LockAdminEndpointTest extends LockAdminEndpointSupport {

    @Autowired
    private MeterRegistry meterRegistry;

    @Test
    void tellsWhoHoldsAKeyInTheStore() throws Exception {
        LockHandle held = holdOn("invoice-worker-3", "invoices", "i-1");
        try {
            HttpResponse<String> response = call("GET", "/actuator/dlock/invoices?key=invoices:i-1");

            assertThat(response.statusCode()).isEqualTo(200);
            String body = response.body();
            assertThat((Boolean) JsonPath.read(body, "$.acrossInstances")).isTrue();
            List<Map<String, Object>> holders = JsonPath.read(body, "$.holders");
            assertThat(holders).singleElement().satisfies(holder -> {
                assertThat(holder).containsEntry("instance", "shop-eu-1").containsEntry("holder", "invoice-worker-3")
                        .containsKeys("acquiredAt", "leaseRemaining");
                assertThat(((Number) holder.get("leaseRemainingMillis")).longValue()).isBetween(1L, 3_000L);
            });
            assertThat(body).as("the owner token, which could release the lock, is never shown").doesNotContain(":1\"")
                    .doesNotContain("owner");
            assertThat(JsonPath.<Integer>read(call("GET", "/actuator/dlock/invoices?key=invoices:i-2").body(), "$.count")).isZero();
        } finally {
            held.close();
        }
    }

    @Test
    void aForcedReleaseFreesTheKeyAndItsHolderLosesTheLease() throws Exception {
        LockHandle stuck = holdOn("stuck-worker", "orders", "o-7");

        HttpResponse<String> response = call("DELETE", "/actuator/dlock/orders?key=orders:o-7");

        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        List<Map<String, Object>> removed = JsonPath.read(response.body(), "$.holders");
        assertThat(removed).singleElement().satisfies(holder ->
                assertThat(holder).containsEntry("instance", "shop-eu-1").containsEntry("holder", "stuck-worker"));
        assertThat(JsonPath.<Integer>read(call("GET", "/actuator/dlock/orders?key=orders:o-7").body(), "$.count")).isZero();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (stuck.state() != LockState.LOST && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(stuck.state()).as("the holder learns at its next renewal").isEqualTo(LockState.LOST);
        assertThatThrownBy(stuck::close).isInstanceOf(LockLostException.class).hasMessageContaining("taken by a forced release");
        assertThat(lockManager.tryAcquire("orders:o-7")).as("the key is free for the next holder").hasValueSatisfying(LockHandle::close);
        assertThat(meterRegistry.get(LockMetrics.FORCED_RELEASES).tag(LockMetrics.TAG_LOCK_NAME, "orders").counter().count())
                .isEqualTo(1.0);
    }

    @Test
    void theKeyTheListShowsIsTheKeyTheForcedReleaseFrees() throws Exception {
        LockHandle stuck = holdOn("report-job", "nightly-report", "n2");
        try {
            List<Map<String, Object>> locks = JsonPath.read(call("GET", "/actuator/dlock").body(), "$.locks");
            Map<String, Object> listed = locks.stream().filter(lock -> "nightly-report".equals(lock.get("name"))).findFirst().orElseThrow();
            assertThat(listed).containsEntry("key", "nightly-report:n2");

            HttpResponse<String> response = call("DELETE", "/actuator/dlock/nightly-report?key=" + listed.get("key"));

            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(JsonPath.<Integer>read(response.body(), "$.count")).isEqualTo(1);
            assertThat(JsonPath.<String>read(response.body(), "$.key")).isEqualTo("nightly-report:n2");
            assertThat(stuck.state()).as("the key was freed").isEqualTo(LockState.LOST);
            assertThat(forcedReleases("nightly-report")).isEqualTo(1.0);
        } finally {
            catchThrowable(stuck::close); // the lost lease's release throws under dlock.on-lease-lost=throw
        }
    }

    @Test
    void aNameOrKeyThatMatchesNothingAnswers404SayingSoAndCountsNothing() throws Exception {
        LockHandle held = holdOn("report-job", "weekly-report", "w7");
        try {
            HttpResponse<String> misspelt = call("DELETE", "/actuator/dlock/weekly-reprot?key=weekly-report:w7");
            HttpResponse<String> shortKey = call("DELETE", "/actuator/dlock/weekly-report?key=w7");
            HttpResponse<String> freeKey = call("DELETE", "/actuator/dlock/weekly-report?key=weekly-report:w8");
            HttpResponse<String> misspeltGet = call("GET", "/actuator/dlock/weekly-reprot?key=weekly-report:w7");

            assertThat(misspelt.statusCode()).as(misspelt.body()).isEqualTo(404);
            assertThat(JsonPath.<String>read(misspelt.body(), "$.error")).contains("is not a key of lock 'weekly-reprot'");
            assertThat(shortKey.statusCode()).as(shortKey.body()).isEqualTo(404);
            assertThat(JsonPath.<String>read(shortKey.body(), "$.error")).contains("key 'w7' is not a key of lock 'weekly-report'")
                    .contains("as GET /actuator/dlock lists it");
            assertThat(freeKey.statusCode()).as(freeKey.body()).isEqualTo(404);
            assertThat(JsonPath.<String>read(freeKey.body(), "$.error")).contains("nobody holds key 'weekly-report:w8'");
            assertThat(misspeltGet.statusCode()).as(misspeltGet.body()).isEqualTo(404);
            assertThat(held.isHeld()).as("nothing was released").isTrue();
            assertThat(meterRegistry.find(LockMetrics.FORCED_RELEASES).counters()).as("no forced release counted, no series created")
                    .noneMatch(counter -> String.valueOf(counter.getId().getTag(LockMetrics.TAG_LOCK_NAME)).startsWith("weekly-"));
        } finally {
            held.close();
        }
    }

    @Test
    void aKeyTakenThroughTheApiUnderAnotherNameIsFoundByTheNameItWasTakenUnder() throws Exception {
        LockHandle held = holdOn("api-worker", LockRequest.builder("order:42").name("orders-api").build());
        try {
            HttpResponse<String> response = call("GET", "/actuator/dlock/orders-api?key=order:42");

            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(JsonPath.<Integer>read(response.body(), "$.count")).isEqualTo(1);
        } finally {
            held.close();
        }
    }

    private double forcedReleases(String name) {
        return meterRegistry.get(LockMetrics.FORCED_RELEASES).tag(LockMetrics.TAG_LOCK_NAME, name).counter().count();
    }
}
