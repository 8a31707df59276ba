package dev.dlock.boot.admin;

import dev.dlock.core.LockHandle;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;

import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;

/** The endpoint as it starts by default: it says who holds a key, and refuses to force a release. */
@SpringBootTest(classes = LockAdminApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "dlock.store=in-memory", "management.endpoints.web.exposure.include=dlock"})
class LockAdminEndpointRefusedTest extends LockAdminEndpointSupport {

    @Test
    void aForcedReleaseIsRefusedByDefaultNamingThePropertyAndTheHolderKeepsTheKey() throws Exception {
        LockHandle held = holdOn("payment-worker", "payments", "p-1");
        try {
            HttpResponse<String> response = call("DELETE", "/actuator/dlock/payments?key=p-1");

            assertThat(response.statusCode()).isEqualTo(403);
            assertThat(response.body()).contains("dlock.admin.force-release.enabled=true");
            assertThat(held.isHeld()).isTrue();
            assertThat(call("GET", "/actuator/dlock/payments?key=p-1").body()).contains("payment-worker");
        } finally {
            held.close();
        }
    }
}
