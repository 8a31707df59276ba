package dev.dlock.integration;

import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * What a {@link DlockLockRegistry} is on Spring Integration 7.x, whose registries are generic in their lock type:
 * expirable and renewable registries of {@link DistributedLock}s, as {@code RedisLockRegistry} and
 * {@code JdbcLockRegistry} are, so an injection point typed like theirs ({@code LockRegistry<DistributedLock>}) takes it;
 * {@code obtain} answers a {@link DlockLock}. Its twin in {@code spring-integration/si6} names the raw interfaces of 6.5.
 */
interface LineLockRegistry extends ExpirableLockRegistry<DistributedLock>, RenewableLockRegistry<DistributedLock> {
}
