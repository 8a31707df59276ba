package dev.dlock.boot;

import dev.dlock.boot.observation.LockObservationListener;
import dev.dlock.core.LockManager;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Observations (trace spans) of lock waits and holds, when the application has an
 * {@link ObservationRegistry}; switched off with {@code dlock.observation.enabled=false}. Like the
 * meters' listener, it reaches the auto-configured lock manager as a LockListener bean.
 */
@AutoConfiguration(
        after = DistributedLockAutoConfiguration.class,
        afterName = {
                "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration",
                "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration"})
@ConditionalOnClass({ObservationRegistry.class, LockManager.class})
@ConditionalOnBean({ObservationRegistry.class, LockManager.class})
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".observation.enabled", matchIfMissing = true)
@EnableConfigurationProperties(DistributedLockProperties.class)
public class DistributedLockObservationAutoConfiguration {

    /** Observes lock waits and holds. */
    @Bean
    @ConditionalOnMissingBean
    public LockObservationListener dlockObservationListener(ObservationRegistry registry, DistributedLockProperties properties) {
        return new LockObservationListener(registry, properties.getObservation().isKeyInSpans());
    }
}
