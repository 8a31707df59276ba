package dev.dlock.boot;

import java.util.function.Function;

import dev.dlock.core.spi.LockBackend;
import org.springframework.beans.factory.ListableBeanFactory;

/**
 * One store's part of {@code dlock.verify-on-start}: a round trip to the store the lock manager uses,
 * failing with what to fix in that store's terms (the property, or the application's client bean).
 * Each store auto-configuration contributes one; a store none of them knows is pinged as it is.
 */
@FunctionalInterface
interface StoreStartupCheck {

    /** Ends every action: how to start anyway. */
    String OR_START_WITHOUT_CHECK = "Or set " + DistributedLockProperties.PREFIX + ".verify-on-start=false to start "
            + "without this check (locks then fail until the store answers).";

    /**
     * Checks {@code backend} and returns true when it is this check's store; returns false, without a call,
     * when it is another.
     *
     * @throws DistributedLockStartupException when the store cannot be used
     */
    boolean verify(LockBackend backend);

    /** True when {@code backend} is the bean {@code name}: a store the auto-configuration built from its own settings. */
    static boolean isBean(ListableBeanFactory beans, String name, LockBackend backend) {
        return beans.containsBean(name) && beans.getBean(name) == backend;
    }

    /** Pings {@code backend}; a failure becomes what {@code failure} makes of it. */
    static void ping(LockBackend backend, Function<RuntimeException, DistributedLockStartupException> failure) {
        try {
            backend.ping();
        } catch (RuntimeException e) {
            throw failure.apply(e);
        }
    }

    /** A failed check: {@code description} and {@code fix} name what to change; the action ends with {@link #OR_START_WITHOUT_CHECK}. */
    static DistributedLockStartupException failed(String description, String fix, Throwable cause) {
        return new DistributedLockStartupException(description, fix + " " + OR_START_WITHOUT_CHECK, cause);
    }
}
