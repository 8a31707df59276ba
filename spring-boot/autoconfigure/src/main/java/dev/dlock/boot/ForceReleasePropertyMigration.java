package dev.dlock.boot;

import dev.dlock.boot.actuate.DistributedLockEndpoint;
import org.apache.commons.logging.Log;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.config.ConfigDataEnvironmentPostProcessor;
import org.springframework.boot.logging.DeferredLogFactory;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

import java.util.Map;

/**
 * Keeps the deprecated {@code dlock.admin.force-release.enabled=true} working: it becomes
 * {@code management.endpoint.dlock.access=unrestricted}, Spring Boot's own switch of the endpoint's forced release,
 * unless that property is set (it then wins), with a WARN naming the replacement. {@code false}, the old default, is
 * what the endpoint's default access ({@code read-only}) does anyway.
 *
 * <p>Registered under Boot 3.5's {@code org.springframework.boot.env.EnvironmentPostProcessor}, which Boot 4.1 still
 * loads (deprecated there, marked for removal): one class for both lines while the property lives, removed with it.
 */
@SuppressWarnings({"deprecation", "removal"})
class ForceReleasePropertyMigration implements org.springframework.boot.env.EnvironmentPostProcessor, Ordered {

    /** The deprecated property. */
    static final String FORCE_RELEASE_PROPERTY = "dlock.admin.force-release.enabled";

    /** The property source that carries the mapped value, last in precedence. */
    static final String PROPERTY_SOURCE = "dlockDeprecatedForceRelease";

    private final Log log;

    /** Created by Spring Boot with its deferred logging (the log system is not set up yet). */
    ForceReleasePropertyMigration(DeferredLogFactory logFactory) {
        this.log = logFactory.getLog(ForceReleasePropertyMigration.class);
    }

    /** Maps the deprecated property onto the endpoint's access, once the application's configuration is loaded. */
    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
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

    /** Right after the application's configuration files are read. */
    @Override
    public int getOrder() {
        return ConfigDataEnvironmentPostProcessor.ORDER + 1;
    }
}
