package dev.dlock.integration;

import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * What a {@link DlockLockRegistry} is on Spring Integration 7.x, whose registries are generic in their lock type:
 * expirable and renewable, its locks {@link DlockLock}s. Its twin in {@code spring-integration/si6} names the raw
 * interfaces of 6.5.
 */
interface LineLockRegistry extends ExpirableLockRegistry<DlockLock>, RenewableLockRegistry<DlockLock> {
}
