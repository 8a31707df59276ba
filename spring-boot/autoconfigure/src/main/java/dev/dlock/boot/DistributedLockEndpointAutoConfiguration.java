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
import org.springframework.core.env.Environment;

/** The Actuator endpoint {@code dlock} (locks held here, who holds a key, an operator's forced release), when Actuator is present and the endpoint is exposed. */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(LockManager.class)
@ConditionalOnAvailableEndpoint(DistributedLockEndpoint.class)
public class DistributedLockEndpointAutoConfiguration {

    /** Lists the locks this JVM holds and who holds a key; forces a release only when dlock.admin.force-release.enabled. */
    @Bean
    @ConditionalOnMissingBean
    public DistributedLockEndpoint distributedLockEndpoint(LockManager lockManager, Environment environment) {
        return new DistributedLockEndpoint(lockManager,
                environment.getProperty(DistributedLockEndpoint.FORCE_RELEASE_PROPERTY, Boolean.class, false));
    }
}
