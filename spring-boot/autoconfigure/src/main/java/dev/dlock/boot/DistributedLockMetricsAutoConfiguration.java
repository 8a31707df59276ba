package dev.dlock.boot;

import dev.dlock.boot.metrics.LockManagerMetrics;
import dev.dlock.boot.metrics.LockMeterDefaults;
import dev.dlock.boot.metrics.MicrometerLockListener;
import dev.dlock.core.LockManager;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * dlock's Micrometer counters and gauges, and the defaults of its timers, when the application has a
 * {@link MeterRegistry}; switched off with {@code dlock.metrics.enabled=false}. The timers themselves are the
 * observations' ({@link DistributedLockObservationAutoConfiguration}), made by Boot's meter observation handler. The
 * listener reaches the auto-configured lock manager as a LockListener bean: every bean definition exists before the
 * manager is created, so running after its auto-configuration is safe. An application's own LockManager must add the
 * listener itself.
 */
@AutoConfiguration(
        after = DistributedLockAutoConfiguration.class,
        afterName = {
                "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
                "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
                // Spring Boot 3.5 names of the same auto-configurations
                "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
                "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration"})
@ConditionalOnClass({MeterRegistry.class, LockManager.class})
@ConditionalOnBean({MeterRegistry.class, LockManager.class})
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".metrics.enabled", matchIfMissing = true)
public class DistributedLockMetricsAutoConfiguration {

    /** Records lock events as meters. */
    @Bean
    @ConditionalOnMissingBean
    public MicrometerLockListener dlockMetricsListener(MeterRegistry registry) {
        return new MicrometerLockListener(registry);
    }

    /**
     * Descriptions and percentile histograms of dlock's timers (its own meter names only), so that the dashboard's
     * percentile panels have data; {@code management.metrics.distribution.percentiles-histogram.dlock=false} turns the
     * histograms off.
     */
    @Bean
    @ConditionalOnMissingBean
    public LockMeterDefaults dlockMeterDefaults() {
        return new LockMeterDefaults();
    }

    /** Registers the watchdog gauge of the lock manager. */
    @Bean
    @ConditionalOnMissingBean
    public LockManagerMetrics dlockLockManagerMetrics(LockManager lockManager) {
        return new LockManagerMetrics(lockManager);
    }
}
