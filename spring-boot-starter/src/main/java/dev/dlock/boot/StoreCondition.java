package dev.dlock.boot;

import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/** Matches the lock store chosen with {@code dlock.store}, bound the way the properties bind it (so {@code in-memory}, {@code IN_MEMORY} ... all work). */
abstract class StoreCondition implements Condition {

    static final String STORE = DistributedLockProperties.PREFIX + ".store";

    private final DistributedLockProperties.Store store;

    StoreCondition(DistributedLockProperties.Store store) {
        this.store = store;
    }

    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
        return Binder.get(context.getEnvironment()).bind(STORE, DistributedLockProperties.Store.class)
                .orElse(DistributedLockProperties.Store.REDIS) == store;
    }

    /** {@code dlock.store=redis}, or not set. */
    static class Redis extends StoreCondition {
        Redis() {
            super(DistributedLockProperties.Store.REDIS);
        }
    }

    /** {@code dlock.store=zookeeper}. */
    static class ZooKeeper extends StoreCondition {
        ZooKeeper() {
            super(DistributedLockProperties.Store.ZOOKEEPER);
        }
    }

    /** {@code dlock.store=in-memory}. */
    static class InMemory extends StoreCondition {
        InMemory() {
            super(DistributedLockProperties.Store.IN_MEMORY);
        }
    }

    /** {@code dlock.store=jdbc}. */
    static class Jdbc extends StoreCondition {
        Jdbc() {
            super(DistributedLockProperties.Store.JDBC);
        }
    }
}
