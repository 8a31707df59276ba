package dev.dlock.boot;

import dev.dlock.core.LockManager;
import dev.dlock.shedlock.DlockLockProvider;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

import static dev.dlock.boot.DistributedLockProperties.PREFIX;

/**
 * ShedLock's {@link LockProvider} backed by the application's {@link LockManager}, when ShedLock and {@code dlock-shedlock}
 * are on the class path and the application defined no provider of its own: its {@code @SchedulerLock} methods then
 * lock in dlock's store with no code change (keys {@code shedlock:<name>}; see {@link DlockLockProvider}).
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({LockProvider.class, DlockLockProvider.class})
@ConditionalOnBooleanProperty(name = PREFIX + ".enabled", matchIfMissing = true)
public class ShedLockAutoConfiguration {

    /** ShedLock's locks as dlock keys {@code shedlock:<name>} in the application's lock manager. */
    @Bean
    @ConditionalOnMissingBean(LockProvider.class)
    @ConditionalOnSingleCandidate(LockManager.class)
    public DlockLockProvider dlockShedLockProvider(LockManager locks) {
        return new DlockLockProvider(locks);
    }
}
