package dev.dlock.boot;

import dev.dlock.boot.actuate.DistributedLockEndpoint;
import dev.dlock.boot.actuate.DistributedLockWebEndpointExtension;
import dev.dlock.core.LockManager;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.autoconfigure.endpoint.expose.EndpointExposure;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The Actuator endpoint {@code dlock} (locks held here, who holds a key, an operator's forced release), when Actuator is
 * present and the endpoint is available (exposed, and its access not {@code none}); its web extension when it is
 * exposed over the web. The forced release needs {@code management.endpoint.dlock.access=unrestricted}.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({Endpoint.class, ConditionalOnAvailableEndpoint.class})
@ConditionalOnBean(LockManager.class)
@ConditionalOnAvailableEndpoint(DistributedLockEndpoint.class)
public class DistributedLockEndpointAutoConfiguration {

    /** Lists the locks this JVM holds and who holds a key, and forces a release where the endpoint's access allows it. */
    @Bean
    @ConditionalOnMissingBean
    public DistributedLockEndpoint distributedLockEndpoint(LockManager lockManager) {
        return new DistributedLockEndpoint(lockManager);
    }

    /** The web's status codes (404 for a key of no lock, 501 for a store that cannot force a release). */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnBean(DistributedLockEndpoint.class)
    @ConditionalOnAvailableEndpoint(endpoint = DistributedLockEndpoint.class, exposure = EndpointExposure.WEB)
    public DistributedLockWebEndpointExtension distributedLockWebEndpointExtension(DistributedLockEndpoint endpoint) {
        return new DistributedLockWebEndpointExtension(endpoint);
    }
}
