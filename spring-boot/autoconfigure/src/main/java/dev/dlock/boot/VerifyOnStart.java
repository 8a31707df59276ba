package dev.dlock.boot;

import java.util.concurrent.TimeUnit;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;

/**
 * {@code dlock.verify-on-start}: once every singleton exists (so after the aspect, the lock manager
 * and the store were built) and before the application takes traffic, one check of the lock manager's
 * store by the check of that store; a store no check knows is pinged. A failure stops the start with
 * a {@link DistributedLockStartupException} of its own, not nested in another bean's creation.
 */
final class VerifyOnStart implements SmartInitializingSingleton {

    private static final Logger log = LoggerFactory.getLogger(VerifyOnStart.class);

    private final ObjectProvider<LockManager> lockManager;
    private final ObjectProvider<StoreStartupCheck> checks;

    VerifyOnStart(ObjectProvider<LockManager> lockManager, ObjectProvider<StoreStartupCheck> checks) {
        this.lockManager = lockManager;
        this.checks = checks;
    }

    @Override
    public void afterSingletonsInstantiated() {
        LockManager manager = lockManager.getIfUnique();
        if (manager == null) {
            return;
        }
        LockBackend backend = manager.backend();
        long start = System.nanoTime();
        if (checks.orderedStream().noneMatch(check -> check.verify(backend))) {
            StoreStartupCheck.ping(backend, e -> StoreStartupCheck.failed("dlock cannot use its lock store ("
                    + backend.getClass().getSimpleName() + "): " + e.getMessage(),
                    "Check the store's settings, or the application's LockBackend bean.", e));
        }
        log.debug("dlock checked its lock store ({}) at startup in {} ms", backend.getClass().getSimpleName(),
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }
}
