package dev.dlock.integration;

import org.springframework.integration.support.locks.DistributedLock;

/**
 * What a {@link DlockLock} is on Spring Integration 7.x: a {@link DistributedLock} ({@code lock(ttl)},
 * {@code tryLock(wait, ttl)}). Its twin in {@code spring-integration/si6} names the plain {@code Lock} of 6.5, which has
 * no {@code DistributedLock}; the shared sources implement the methods of both.
 */
interface LineLock extends DistributedLock {
}
