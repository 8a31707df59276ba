package dev.dlock.boot;

import dev.dlock.boot.observation.LockAcquireObservationConvention;
import dev.dlock.boot.observation.LockHoldObservationConvention;
import dev.dlock.boot.observation.LockObservationDocumentation;
import dev.dlock.boot.observation.LockObservationListener;
import dev.dlock.core.LockManager;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * dlock's observations ({@link LockObservationDocumentation}: spans of lock waits and holds and, through Boot's meter
 * observation handler, dlock's timers), when the application has an {@link ObservationRegistry}; switched off with
 * {@code dlock.observation.enabled=false} (or Boot's {@code management.observations.enable.dlock=false}). Like the
 * meters' listener, it reaches the auto-configured lock manager as a LockListener bean. A
 * {@link LockAcquireObservationConvention} or {@link LockHoldObservationConvention} bean replaces the default
 * convention of its observation.
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

    /** Observes lock waits and holds, with the application's conventions where it defines them. */
    @Bean
    @ConditionalOnMissingBean
    public LockObservationListener dlockObservationListener(ObservationRegistry registry, DistributedLockProperties properties,
                                                            ObjectProvider<LockAcquireObservationConvention> acquireConvention,
                                                            ObjectProvider<LockHoldObservationConvention> holdConvention) {
        return new LockObservationListener(registry, acquireConvention.getIfUnique(), holdConvention.getIfUnique(),
                properties.getObservation().isKeyInSpans());
    }
}
