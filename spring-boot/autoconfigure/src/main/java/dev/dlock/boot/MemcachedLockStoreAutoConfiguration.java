package dev.dlock.boot;

import static dev.dlock.boot.BuilderProperty.set;

import dev.dlock.boot.DistributedLockProperties.Store;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.memcached.MemcachedLockBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * The memcached lock store for {@code dlock.store=memcached}, from {@code dlock.memcached.*}: efficiency only
 * (an eviction or a restart drops a held lock silently; no fencing tokens), which the startup line says. Runs
 * before the store-neutral {@link DistributedLockAutoConfiguration}; lock kinds other than exclusive are refused
 * when the annotated methods are read at startup, naming the method.
 */
@AutoConfiguration(before = DistributedLockAutoConfiguration.class)
@ConditionalOnClass(MemcachedLockBackend.class)
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".enabled", matchIfMissing = true)
@ConditionalOnLockStore(Store.MEMCACHED)
@EnableConfigurationProperties(MemcachedStoreProperties.class)
public class MemcachedLockStoreAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(MemcachedLockStoreAutoConfiguration.class);

    /** The memcached store; it connects on first use, and closes its connections with the context. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    public MemcachedLockBackend dlockMemcachedLockBackend(MemcachedStoreProperties properties) {
        String prefix = MemcachedStoreProperties.PREFIX;
        if (properties.getServers() == null || properties.getServers().stream().allMatch(s -> s == null || s.isBlank())) {
            throw new IllegalStateException(prefix + ".servers is not set: dlock.store=memcached needs the servers "
                    + "(host[:port][,host[:port]...])");
        }
        MemcachedLockBackend.Builder builder = set(prefix + ".servers", () -> MemcachedLockBackend.builder(properties.getServers()));
        set(prefix + ".timeout", () -> builder.timeout(properties.getTimeout()));
        set(prefix + ".pool-size", () -> builder.poolSize(properties.getPoolSize()));
        set(prefix + ".key-prefix", () -> builder.keyPrefix(properties.getKeyPrefix()));
        MemcachedLockBackend backend = builder.build();
        log.warn("dlock locks in memcached {}: efficiency only, never for correctness (an eviction or a restart drops a "
                + "held lock silently; no fencing tokens)", backend.servers());
        return backend;
    }
}
