package dev.dlock.boot;

import dev.dlock.boot.actuate.DistributedLockEndpoint;
import org.apache.commons.logging.Log;
import org.springframework.boot.context.config.ConfigDataEnvironmentPostProcessor;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

import java.util.Map;

/**
 * Keeps the deprecated {@code dlock.admin.force-release.enabled=true} working: it becomes
 * {@code management.endpoint.dlock.access=unrestricted}, Spring Boot's own switch of the endpoint's forced release,
 * unless that property is set (it then wins), with a WARN naming the replacement. {@code false}, the old default, is
 * what the endpoint's default access ({@code read-only}) does anyway. Each Boot line's
 * {@code ForceReleasePropertyMigration} runs it as that line's environment post-processor.
 */
final class ForceReleasePropertyMapping {

    /** The deprecated property. */
    static final String FORCE_RELEASE_PROPERTY = "dlock.admin.force-release.enabled";

    /** The property source that carries the mapped value, last in precedence. */
    static final String PROPERTY_SOURCE = "dlockDeprecatedForceRelease";

    /** Right after the application's configuration files are read. */
    static final int ORDER = ConfigDataEnvironmentPostProcessor.ORDER + 1;

    private ForceReleasePropertyMapping() {
    }

    /** Maps the deprecated property onto the endpoint's access, once the application's configuration is loaded. */
    static void apply(ConfigurableEnvironment environment, Log log) {
        if (!Boolean.TRUE.equals(environment.getProperty(FORCE_RELEASE_PROPERTY, Boolean.class))) {
            return;
        }
        String access = environment.getProperty(DistributedLockEndpoint.ACCESS_PROPERTY);
        if (access != null) {
            log.warn(FORCE_RELEASE_PROPERTY + " is deprecated and ignored here: " + DistributedLockEndpoint.ACCESS_PROPERTY
                    + "=" + access + " decides whether DELETE /actuator/dlock frees locks; remove " + FORCE_RELEASE_PROPERTY);
            return;
        }
        environment.getPropertySources().addLast(new MapPropertySource(PROPERTY_SOURCE,
                Map.of(DistributedLockEndpoint.ACCESS_PROPERTY, "unrestricted")));
        log.warn(FORCE_RELEASE_PROPERTY + "=true is deprecated: it now means " + DistributedLockEndpoint.ACCESS_PROPERTY
                + "=unrestricted (Spring Boot's access to the endpoint); set that instead");
    }
}
