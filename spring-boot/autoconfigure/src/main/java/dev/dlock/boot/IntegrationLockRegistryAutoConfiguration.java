package dev.dlock.boot;

import dev.dlock.core.LockManager;
import dev.dlock.integration.DlockLockRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * Spring Integration's {@link LockRegistry} on dlock's lock manager, when the application has Spring Integration and
 * dlock's registry module ({@code dlock-spring-integration}, or {@code dlock-spring-integration6} on Boot 3.5) and
 * defines no {@code LockRegistry} of its own: its {@code LockRegistryLeaderInitiator}, lock advice and aggregators that
 * take the registry bean then lock in dlock's store, with a watchdog-kept lease and fencing tokens. Both lines' modules
 * name the registry {@code dev.dlock.integration.DlockLockRegistry}, so this one class serves both.
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({LockRegistry.class, DlockLockRegistry.class})
@ConditionalOnSingleCandidate(LockManager.class)
public class IntegrationLockRegistryAutoConfiguration {

    /**
     * A registry with the registry key {@value DlockLockRegistry#DEFAULT_REGISTRY_KEY} (store keys
     * {@code spring-integration:<key>}); define a {@code LockRegistry} bean of your own for another one.
     */
    @Bean
    @ConditionalOnMissingBean(LockRegistry.class)
    public DlockLockRegistry dlockLockRegistry(LockManager lockManager) {
        return new DlockLockRegistry(lockManager);
    }
}
