package dev.dlock.boot;

import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.io.support.SpringFactoriesLoader;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Boot 4 loads dlock's environment post-processor through {@code org.springframework.boot.EnvironmentPostProcessor},
 * the interface that replaced {@code org.springframework.boot.env.EnvironmentPostProcessor} (deprecated in 4.0,
 * removed in 4.2): nothing of dlock is registered under the old key, and a real application start maps the
 * deprecated property.
 */
class EnvironmentPostProcessorRegistrationTest {

    @Test
    void registeredUnderTheInterfaceThatBoot42Keeps() {
        List<String> current = SpringFactoriesLoader.loadFactoryNames(org.springframework.boot.EnvironmentPostProcessor.class,
                getClass().getClassLoader());
        @SuppressWarnings({"deprecation", "removal"})
        List<String> deprecated = SpringFactoriesLoader.loadFactoryNames(org.springframework.boot.env.EnvironmentPostProcessor.class,
                getClass().getClassLoader());

        assertThat(current).contains(ForceReleasePropertyMigration.class.getName());
        assertThat(deprecated).noneMatch(name -> name.startsWith("dev.dlock."));
        assertThat(org.springframework.boot.EnvironmentPostProcessor.class).isAssignableFrom(ForceReleasePropertyMigration.class);
    }

    @Test
    void anApplicationStartMapsTheDeprecatedProperty() {
        SpringApplication application = new SpringApplication(Empty.class);
        application.setWebApplicationType(WebApplicationType.NONE);
        application.setDefaultProperties(Map.of(ForceReleasePropertyMapping.FORCE_RELEASE_PROPERTY, "true",
                "spring.autoconfigure.exclude", "*"));
        try (ConfigurableApplicationContext context = application.run()) {
            assertThat(context.getEnvironment().getProperty("management.endpoint.dlock.access")).isEqualTo("unrestricted");
        }
    }

    /** An application with no beans of its own. */
    static class Empty {
    }
}
