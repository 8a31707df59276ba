package dev.dlock.boot;

import dev.dlock.core.LockBackend;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.redis.RedlockBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.env.Environment;

import redis.clients.jedis.UnifiedJedis;

import java.util.function.Function;

import static dev.dlock.boot.BuilderProperty.set;
import static dev.dlock.boot.DistributedLockProperties.PREFIX;

/**
 * The Redis lock store for {@code dlock.store=redis} (the default): a Jedis client from
 * {@code dlock.redis.*} or {@code spring.data.redis.*} (unless the application has its own
 * {@link UnifiedJedis}), and the Redis store over it — or the Redlock store when
 * {@code dlock.redis.redlock.nodes} is set. Runs before the store-neutral
 * {@link DistributedLockAutoConfiguration}, which builds the lock manager over whatever store is there.
 */
@AutoConfiguration(before = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({RedisLockBackend.class, UnifiedJedis.class})
@ConditionalOnBooleanProperty(name = PREFIX + ".enabled", matchIfMissing = true)
@Conditional(StoreCondition.Redis.class)
@EnableConfigurationProperties(DistributedLockProperties.class)
public class RedisLockStoreAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(RedisLockStoreAutoConfiguration.class);

    /** The clients of the Redlock masters, when {@code dlock.redis.redlock.nodes} is set; closed with the context. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean({LockBackend.class, RedlockClients.class})
    @Conditional(RedlockCondition.class)
    public RedlockClients dlockRedlockClients(DistributedLockProperties properties) {
        log.info("dlock locks with Redlock over {} masters", properties.getRedis().getRedlock().getNodes().size());
        return RedisConnectionSettings.createRedlockClients(properties.getRedis());
    }

    /** The Redlock store over independent masters, when {@code dlock.redis.redlock.nodes} is set. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    @Conditional(RedlockCondition.class)
    public RedlockBackend dlockRedlockBackend(RedlockClients clients, DistributedLockProperties properties) {
        RedlockBackend.Builder builder = set(PREFIX + ".redis.redlock.nodes", () -> RedlockBackend.builder(clients.clients()));
        applyKeyPrefix(properties, builder::keyPrefix);
        set(PREFIX + ".watchdog.batch-size", () -> builder.renewalBatchSize(properties.getWatchdog().getBatchSize()));
        return builder.build();
    }

    /** A Jedis client from {@code dlock.redis.*} or {@code spring.data.redis.*}; closed with the context. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(UnifiedJedis.class)
    @Conditional(RedlockCondition.Not.class)
    public UnifiedJedis dlockRedisClient(DistributedLockProperties properties, Environment environment) {
        RedisConnectionSettings settings = RedisConnectionSettings.resolve(properties.getRedis(), Binder.get(environment));
        log.info("dlock connects to Redis {}", settings.describe());
        return settings.createClient();
    }

    /** The Redis lock store over the application's (or the auto-configured) client; the client is not closed by it. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    @Conditional(RedlockCondition.Not.class)
    public RedisLockBackend dlockLockBackend(UnifiedJedis redis, DistributedLockProperties properties) {
        RedisLockBackend.Builder builder = RedisLockBackend.builder(redis);
        applyKeyPrefix(properties, builder::keyPrefix);
        set(PREFIX + ".watchdog.batch-size", () -> builder.renewalBatchSize(properties.getWatchdog().getBatchSize()));
        return builder.build();
    }

    /**
     * Hands the key prefix to a Redis store's builder: {@code dlock.redis.key-prefix}, else the
     * deprecated {@code dlock.key-prefix}, else the builder's default; a refused value names the property used.
     */
    @SuppressWarnings("removal")
    private static void applyKeyPrefix(DistributedLockProperties properties, Function<String, ?> keyPrefix) {
        String redisPrefix = properties.getRedis().getKeyPrefix();
        if (redisPrefix != null) {
            set(PREFIX + ".redis.key-prefix", () -> keyPrefix.apply(redisPrefix));
            return;
        }
        String deprecated = properties.getKeyPrefix();
        if (deprecated != null) {
            log.warn("{}.key-prefix is deprecated; use {}.redis.key-prefix", PREFIX, PREFIX);
            set(PREFIX + ".key-prefix", () -> keyPrefix.apply(deprecated));
        }
    }
}
