package dev.dlock.boot.admin;

import com.jayway.jsonpath.JsonPath;
import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
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

/** The endpoint with the forced release allowed: who holds a key, then an operator frees it and its holder is told. */
@SpringBootTest(classes = LockAdminApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "dlock.store=in-memory", "dlock.instance-id=shop-eu-1", "dlock.lease-time=300ms", "dlock.on-lease-lost=throw",
        "dlock.admin.force-release.enabled=true", "management.endpoints.web.exposure.include=dlock"})
class LockAdminEndpointTest extends LockAdminEndpointSupport {

    @Autowired
    private MeterRegistry meterRegistry;

    @Test
    void tellsWhoHoldsAKeyInTheStore() throws Exception {
        LockHandle held = holdOn("invoice-worker-3", "invoices", "i-1");
        try {
            HttpResponse<String> response = call("GET", "/actuator/dlock/invoices?key=i-1");

            assertThat(response.statusCode()).isEqualTo(200);
            String body = response.body();
            assertThat((Boolean) JsonPath.read(body, "$.acrossInstances")).isTrue();
            List<Map<String, Object>> holders = JsonPath.read(body, "$.holders");
            assertThat(holders).singleElement().satisfies(holder -> {
                assertThat(holder).containsEntry("instance", "shop-eu-1").containsEntry("holder", "invoice-worker-3")
                        .containsKeys("acquiredAt", "leaseRemaining");
                assertThat(((Number) holder.get("leaseRemainingMillis")).longValue()).isBetween(1L, 300L);
            });
            assertThat(body).as("the owner token, which could release the lock, is never shown").doesNotContain(":1\"")
                    .doesNotContain("owner");
            assertThat(JsonPath.<Integer>read(call("GET", "/actuator/dlock/invoices?key=i-2").body(), "$.count")).isZero();
        } finally {
            held.close();
        }
    }

    @Test
    void aForcedReleaseFreesTheKeyAndItsHolderLosesTheLease() throws Exception {
        LockHandle stuck = holdOn("stuck-worker", "orders", "o-7");

        HttpResponse<String> response = call("DELETE", "/actuator/dlock/orders?key=o-7");

        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        List<Map<String, Object>> removed = JsonPath.read(response.body(), "$.holders");
        assertThat(removed).singleElement().satisfies(holder ->
                assertThat(holder).containsEntry("instance", "shop-eu-1").containsEntry("holder", "stuck-worker"));
        assertThat(JsonPath.<Integer>read(call("GET", "/actuator/dlock/orders?key=o-7").body(), "$.count")).isZero();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (stuck.state() != LockState.LOST && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(stuck.state()).as("the holder learns at its next renewal").isEqualTo(LockState.LOST);
        assertThatThrownBy(stuck::close).isInstanceOf(LockLostException.class).hasMessageContaining("taken by a forced release");
        assertThat(lockManager.tryAcquire("orders:o-7")).as("the key is free for the next holder").hasValueSatisfying(LockHandle::close);
        assertThat(meterRegistry.get(LockMetrics.FORCED_RELEASES).tag(LockMetrics.TAG_LOCK_NAME, "orders").counter().count())
                .isEqualTo(1.0);
    }
}
