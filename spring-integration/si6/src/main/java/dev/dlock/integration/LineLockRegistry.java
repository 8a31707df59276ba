package dev.dlock.integration;

import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

/**
 * What a {@link DlockLockRegistry} is on Spring Integration 6.5, whose registries are not generic: expirable and
 * renewable ({@code obtain} answers a {@link DlockLock}, a covariant {@code Lock}). Its twin in
 * {@code spring-integration/si7} names 7.x's generic interfaces.
 */
interface LineLockRegistry extends ExpirableLockRegistry, RenewableLockRegistry {
}
