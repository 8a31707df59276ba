package dev.dlock.boot;

import org.apache.commons.logging.Log;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.logging.DeferredLogFactory;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * Runs {@link ForceReleasePropertyMapping} as Boot 4's environment post-processor: {@code org.springframework.boot.EnvironmentPostProcessor}, which replaced
 * {@code org.springframework.boot.env.EnvironmentPostProcessor} (deprecated in 4.0, removed in 4.2).
 */
class ForceReleasePropertyMigration implements org.springframework.boot.EnvironmentPostProcessor, Ordered {

    private final Log log;

    /** Created by Spring Boot with its deferred logging (the log system is not set up yet). */
    ForceReleasePropertyMigration(DeferredLogFactory logFactory) {
        this.log = logFactory.getLog(ForceReleasePropertyMigration.class);
    }

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        ForceReleasePropertyMapping.apply(environment, log);
    }

    @Override
    public int getOrder() {
        return ForceReleasePropertyMapping.ORDER;
    }
}
