package dev.dlock.integration;

import java.util.concurrent.locks.Lock;

/**
 * What a {@link DlockLock} is on Spring Integration 6.5: a plain {@link Lock} (6.5 has no {@code DistributedLock}; the
 * lock still offers {@code lock(ttl)} and {@code tryLock(wait, ttl)} as its own methods). Its twin in
 * {@code spring-integration/si7} names 7.x's {@code DistributedLock}.
 */
interface LineLock extends Lock {
}
