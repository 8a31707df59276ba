package dev.dlock.boot;

import dev.dlock.boot.actuate.DistributedLockEndpoint;
import dev.dlock.core.LockManager;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/** The Actuator endpoint {@code dlock} listing the locks this JVM holds, when Actuator is present and the endpoint is exposed. */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(LockManager.class)
@ConditionalOnAvailableEndpoint(DistributedLockEndpoint.class)
public class DistributedLockEndpointAutoConfiguration {

    /** Lists the locks this JVM holds. */
    @Bean
    @ConditionalOnMissingBean
    public DistributedLockEndpoint distributedLockEndpoint(LockManager lockManager) {
        return new DistributedLockEndpoint(lockManager);
    }
}
