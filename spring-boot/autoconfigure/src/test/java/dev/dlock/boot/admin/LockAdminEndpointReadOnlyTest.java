package dev.dlock.boot.admin;

import dev.dlock.core.LockHandle;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;

import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The endpoint as it starts by default: its access is read-only, so it says who holds a key, and Spring Boot itself
 * refuses the forced release (no DELETE operation is mapped) until {@code management.endpoint.dlock.access=unrestricted}.
 */
@SpringBootTest(classes = LockAdminApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "dlock.store=in-memory", "management.endpoints.web.exposure.include=dlock"})
class LockAdminEndpointReadOnlyTest extends LockAdminEndpointSupport {

    @Test
    void aForcedReleaseIsRefusedByBootUnderTheDefaultReadOnlyAccessAndTheHolderKeepsTheKey() throws Exception {
        LockHandle held = holdOn("payment-worker", "payments", "p-1");
        try {
            HttpResponse<String> response = call("DELETE", "/actuator/dlock/payments?key=payments:p-1");

            assertThat(response.statusCode()).as(response.body()).isEqualTo(405);
            assertThat(held.isHeld()).isTrue();
            HttpResponse<String> holders = call("GET", "/actuator/dlock/payments?key=payments:p-1");
            assertThat(holders.statusCode()).isEqualTo(200);
            assertThat(holders.body()).contains("payment-worker");
        } finally {
            held.close();
        }
    }
}
