package dev.dlock.boot;

import dev.dlock.boot.actuate.LockStoreHealthIndicator;
import dev.dlock.core.LockManager;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code dlock} health indicator (store reachable, watchdog not stalled), when Spring Boot's
 * health support is present; off with {@code management.health.dlock.enabled=false}. It stays out of
 * the availability probes' readiness group: an application whose traffic needs the store opts in with
 * Boot's own {@code management.endpoint.health.group.readiness.include=readinessState,dlock}.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
@ConditionalOnBean(LockManager.class)
@ConditionalOnEnabledHealthIndicator("dlock")
public class DistributedLockHealthAutoConfiguration {

    /** Checks the lock store and the watchdog; its bean name makes it the {@code dlock} health contributor. */
    @Bean
    @ConditionalOnMissingBean(name = "dlockHealthIndicator")
    public LockStoreHealthIndicator dlockHealthIndicator(LockManager lockManager) {
        return new LockStoreHealthIndicator(lockManager);
    }
}
