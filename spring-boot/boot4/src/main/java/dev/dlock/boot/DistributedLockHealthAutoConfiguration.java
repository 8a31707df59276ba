package dev.dlock.boot;

import dev.dlock.boot.actuate.LockStoreHealthIndicator;
import dev.dlock.boot.actuate.LockStoreReadiness;
import dev.dlock.core.LockManager;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * The {@code dlock} health indicator (store reachable, watchdog not stalled), when Spring Boot's
 * health support is present; off with {@code management.health.dlock.enabled=false}. It joins the
 * readiness group of Boot's availability probes, unless the application lists that group's members.
 */
// After the probes' auto-configuration: its groups post-processor, which creates the readiness group, then runs first.
@AutoConfiguration(after = DistributedLockAutoConfiguration.class, afterName = "org.springframework.boot.health.autoconfigure.actuate.endpoint.AvailabilityProbesAutoConfiguration")
@ConditionalOnClass({HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
@ConditionalOnBean(LockManager.class)
@ConditionalOnEnabledHealthIndicator("dlock")
public class DistributedLockHealthAutoConfiguration {

    private static final String READINESS_MEMBERS = "management.endpoint.health.group." + LockStoreReadiness.READINESS + ".include";

    /** Checks the lock store and the watchdog; its bean name makes it the {@code dlock} health contributor. */
    @Bean
    @ConditionalOnMissingBean(name = "dlockHealthIndicator")
    public LockStoreHealthIndicator dlockHealthIndicator(LockManager lockManager) {
        return new LockStoreHealthIndicator(lockManager);
    }

    /** Puts the {@code dlock} contributor in the probes' readiness group, unless the application configures that group. */
    @Bean
    public LockStoreReadiness dlockReadiness(Environment environment) {
        return new LockStoreReadiness(Binder.get(environment).bind(READINESS_MEMBERS, Bindable.setOf(String.class)).isBound());
    }
}
