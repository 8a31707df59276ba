package dev.dlock.boot;

import dev.dlock.boot.DistributedLockProperties.Store;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.ClassUtils;

/** Matches the lock store chosen with {@code dlock.store}, bound the way the properties bind it (so {@code in-memory}, {@code IN_MEMORY} ... all work). */
abstract class StoreCondition implements Condition {

    static final String STORE = DistributedLockProperties.PREFIX + ".store";

    private final DistributedLockProperties.Store store;

    StoreCondition(DistributedLockProperties.Store store) {
        this.store = store;
    }

    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
        return chosen(context.getEnvironment(), context.getClassLoader()) == store;
    }

    /**
     * The store {@code dlock.store} names; when it is not set, the one whose store module (and client) is
     * on the class path — Redis, then ZooKeeper, then JDBC, then memcached — so that a store starter alone is enough;
     * Redis when there is none.
     */
    static Store chosen(Environment environment, ClassLoader classLoader) {
        return Binder.get(environment).bind(STORE, Store.class).orElseGet(() -> {
            if (present(classLoader, "dev.dlock.redis.RedisLockBackend", "redis.clients.jedis.UnifiedJedis")) {
                return Store.REDIS;
            }
            if (present(classLoader, "dev.dlock.zookeeper.ZooKeeperLockBackend", "org.apache.curator.framework.CuratorFramework")) {
                return Store.ZOOKEEPER;
            }
            if (present(classLoader, "dev.dlock.jdbc.JdbcLockBackend", "javax.sql.DataSource")) {
                return Store.JDBC;
            }
            if (present(classLoader, "dev.dlock.memcached.MemcachedLockBackend")) {
                return Store.MEMCACHED;
            }
            return Store.REDIS;
        });
    }

    private static boolean present(ClassLoader classLoader, String... classNames) {
        for (String className : classNames) {
            if (!ClassUtils.isPresent(className, classLoader)) {
                return false;
            }
        }
        return true;
    }

    /** {@code dlock.store=redis}, or not set with the Redis module present. */
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

    /** {@code dlock.store=memcached}. */
    static class Memcached extends StoreCondition {
        Memcached() {
            super(DistributedLockProperties.Store.MEMCACHED);
        }
    }
}
