package dev.dlock.boot;

import org.apache.commons.logging.Log;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.mock.env.MockPropertySource;

import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/** The deprecated {@code dlock.admin.force-release.enabled} maps onto Boot's endpoint access, which wins when set. */
class ForceReleasePropertyMigrationTest {

    private static final String ACCESS = "management.endpoint.dlock.access";

    private final ForceReleasePropertyMigration migration = new ForceReleasePropertyMigration(Supplier<Log>::get);

    @Test
    void trueBecomesUnrestrictedAccess() {
        StandardEnvironment environment = environment(new MockPropertySource().withProperty("dlock.admin.force-release.enabled", "true"));

        migration.postProcessEnvironment(environment, new SpringApplication());

        assertThat(environment.getProperty(ACCESS)).isEqualTo("unrestricted");
    }

    @Test
    void theAccessPropertyWinsAndFalseOrUnsetChangesNothing() {
        StandardEnvironment both = environment(new MockPropertySource().withProperty("dlock.admin.force-release.enabled", "true")
                .withProperty(ACCESS, "read-only"));
        StandardEnvironment off = environment(new MockPropertySource().withProperty("dlock.admin.force-release.enabled", "false"));
        StandardEnvironment unset = environment(new MockPropertySource());

        migration.postProcessEnvironment(both, new SpringApplication());
        migration.postProcessEnvironment(off, new SpringApplication());
        migration.postProcessEnvironment(unset, new SpringApplication());

        assertThat(both.getProperty(ACCESS)).isEqualTo("read-only");
        assertThat(off.getProperty(ACCESS)).isNull();
        assertThat(unset.getProperty(ACCESS)).isNull();
    }

    private static StandardEnvironment environment(MockPropertySource properties) {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().addFirst(properties);
        return environment;
    }
}
