package dev.dlock.boot;

import dev.dlock.boot.observation.LockObservationListener;
import dev.dlock.core.LockManager;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Observations (trace spans) of lock waits and holds, when the application has an
 * {@link ObservationRegistry}; switched off with {@code dlock.observation.enabled=false}. Like the
 * meters' listener, it reaches the auto-configured lock manager as a LockListener bean. The observations
 * make spans only: the meters of a lock are dlock's own ({@code dlock.acquire}, {@code dlock.held}, ...).
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

    /**
     * Keeps the meters a registry's observation handler would make of dlock's observations
     * ({@code dlock.lock.acquire}, {@code dlock.lock.hold}, their {@code .active} long-task timers) out of
     * the registries: they time what {@code dlock.acquire} and {@code dlock.held} already time, and one
     * measure has one name. Define a bean of this name to have them back.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterFilter.class)
    static class ObservationMeters {

        /**
         * Denies every meter named after a dlock observation, and only those: dlock's own counters under
         * {@code dlock.lock.} ({@code dlock.lock.order.inversions}, {@code dlock.lock.forced.releases}) stay.
         */
        @Bean
        @ConditionalOnMissingBean(name = "dlockObservationMeterFilter")
        MeterFilter dlockObservationMeterFilter() {
            return MeterFilter.deny(id -> id.getName().startsWith(LockObservationListener.ACQUIRE)
                    || id.getName().startsWith(LockObservationListener.HOLD));
        }
    }
}
