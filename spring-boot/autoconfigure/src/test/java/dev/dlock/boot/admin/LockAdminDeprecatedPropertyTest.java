package dev.dlock.boot.admin;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockState;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;

import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;

/** The deprecated {@code dlock.admin.force-release.enabled=true} still allows the forced release: it maps onto the endpoint's access. */
@SpringBootTest(classes = LockAdminApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "dlock.store=in-memory", "dlock.admin.force-release.enabled=true", "management.endpoints.web.exposure.include=dlock"})
class LockAdminDeprecatedPropertyTest extends LockAdminEndpointSupport {

    @Test
    void theDeprecatedPropertyStillAllowsTheForcedRelease() throws Exception {
        LockHandle stuck = holdOn("stuck-worker", "refunds", "r-4");
        try {
            HttpResponse<String> response = call("DELETE", "/actuator/dlock/refunds?key=refunds:r-4");

            assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
            assertThat(stuck.state()).as("this JVM's holder loses its lease at once").isEqualTo(LockState.LOST);
        } finally {
            stuck.close(); // dlock.on-lease-lost=log (application.yml): the lost lease is logged
        }
    }
}
