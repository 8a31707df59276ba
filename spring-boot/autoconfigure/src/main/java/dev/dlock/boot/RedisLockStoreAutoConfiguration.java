package dev.dlock.boot;

import dev.dlock.boot.DistributedLockProperties.Store;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.redis.RedlockBackend;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import dev.dlock.redis.JedisGeneration;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

import java.time.Duration;
import java.util.function.Function;

import static dev.dlock.boot.BuilderProperty.set;
import static dev.dlock.boot.DistributedLockProperties.PREFIX;

/**
 * The Redis lock store for {@code dlock.store=redis} (the default), and the Jedis client it locks with.
 * Where that client comes from, first match wins: the application's {@link UnifiedJedis} bean marked
 * {@link DlockRedisClient @DlockRedisClient} or named {@value DlockRedisClient#BEAN_NAME}; else
 * {@code dlock.redis.*}; else the application's Redis connection details bean (Testcontainers,
 * Docker Compose...); else {@code spring.data.redis.*}. Other {@code UnifiedJedis} beans are not used.
 * With {@code dlock.redis.redlock.nodes} set, the Redlock store runs over its own masters instead. Runs before the store-neutral
 * {@link DistributedLockAutoConfiguration}, which builds the lock manager over whatever store is there and, with
 * {@code dlock.verify-on-start}, has this configuration's check ping it once at startup.
 */
@AutoConfiguration(before = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({RedisLockBackend.class, UnifiedJedis.class})
@ConditionalOnBooleanProperty(name = PREFIX + ".enabled", matchIfMissing = true)
@ConditionalOnLockStore(Store.REDIS)
@EnableConfigurationProperties({DistributedLockProperties.class, RedisStoreProperties.class})
public class RedisLockStoreAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(RedisLockStoreAutoConfiguration.class);
    private static final String REDIS_BACKEND = "dlockLockBackend";
    private static final String REDLOCK_BACKEND = "dlockRedlockBackend";

    /** The clients of the Redlock masters, when {@code dlock.redis.redlock.nodes} is set; closed with the context. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean({LockBackend.class, RedlockClients.class})
    @Conditional(RedlockCondition.class)
    public RedlockClients dlockRedlockClients(RedisStoreProperties redis, ObjectProvider<SslBundles> sslBundles) {
        log.info("dlock locks with Redlock over {} masters", redis.getRedlock().getNodes().size());
        JedisGeneration.requireSupported();
        return RedisConnectionSettings.createRedlockClients(redis, sslBundles(sslBundles));
    }

    /** The Redlock store over independent masters, when {@code dlock.redis.redlock.nodes} is set. */
    @Bean(name = REDLOCK_BACKEND, destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    @Conditional(RedlockCondition.class)
    public RedlockBackend dlockRedlockBackend(RedlockClients clients, DistributedLockProperties properties,
                                              RedisStoreProperties redis) {
        RedlockBackend.Builder builder = set(RedisStoreProperties.PREFIX + ".redlock.nodes", () -> RedlockBackend.builder(clients.clients()));
        applyKeyPrefix(properties, redis, builder::keyPrefix);
        set(PREFIX + ".watchdog.batch-size", () -> builder.renewalBatchSize(properties.getWatchdog().getBatchSize()));
        return builder.build();
    }

    /**
     * Where dlock's own client connects: {@code dlock.redis.*}, the application's Redis connection details or
     * {@code spring.data.redis.*}; there when dlock creates the client, absent when the application brings its own.
     */
    @Bean
    @ConditionalOnMissingBean(name = DlockRedisClient.BEAN_NAME, annotation = DlockRedisClient.class)
    @Conditional(RedlockCondition.Not.class)
    RedisConnectionSettings dlockRedisConnectionSettings(RedisStoreProperties redis, Environment environment,
                                                         ListableBeanFactory beans) {
        boolean detailsPresent = ClassUtils.isPresent(RedisConnectionDetailsReader.DETAILS_CLASS,
                RedisLockStoreAutoConfiguration.class.getClassLoader());
        return RedisConnectionSettings.resolve(redis, Binder.get(environment),
                (connectTimeout, readTimeout) -> detailsPresent
                        ? RedisConnectionDetailsReader.read(beans, connectTimeout, readTimeout) : null);
    }

    /**
     * dlock's Jedis client, from {@code dlock.redis.*}, the application's Redis connection details or
     * {@code spring.data.redis.*}, unless the application defines its own dlock client; closed with the context.
     */
    @Bean(name = DlockRedisClient.BEAN_NAME, destroyMethod = "close")
    @DlockRedisClient
    @ConditionalOnMissingBean(name = DlockRedisClient.BEAN_NAME, annotation = DlockRedisClient.class)
    @Conditional(RedlockCondition.Not.class)
    public UnifiedJedis dlockRedisClient(RedisConnectionSettings settings, ObjectProvider<SslBundles> sslBundles) {
        JedisGeneration.requireSupported();
        String fallbackReason = settings.fallbackReason();
        if (fallbackReason != null) {
            log.warn("dlock connects to Redis {}: {}", settings.describe(), fallbackReason);
        } else {
            log.info("dlock connects to Redis {}", settings.describe());
        }
        try {
            return settings.createClient(sslBundles(sslBundles));
        } catch (JedisException e) {
            // Sentinel and Cluster clients connect as they are created, to find the master or the slots.
            throw new DistributedLockStartupException(settings.cannotUse(e), settings.checkAdvice(), e);
        }
    }

    /** The Redis lock store over the application's (or the auto-configured) client; the client is not closed by it. */
    @Bean(name = REDIS_BACKEND, destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    @Conditional(RedlockCondition.Not.class)
    public RedisLockBackend dlockLockBackend(@DlockRedisClient UnifiedJedis client, DistributedLockProperties properties,
                                             RedisStoreProperties redis) {
        RedisLockBackend.Builder builder = RedisLockBackend.builder(client);
        applyKeyPrefix(properties, redis, builder::keyPrefix);
        set(PREFIX + ".watchdog.batch-size", () -> builder.renewalBatchSize(properties.getWatchdog().getBatchSize()));
        Duration fairWaiterTimeout = redis.getFairWaiterTimeout();
        if (fairWaiterTimeout != null) {
            set(RedisStoreProperties.PREFIX + ".fair-waiter-timeout", () -> builder.fairWaiterTimeout(fairWaiterTimeout));
        }
        builder.coalesceRoundTrips(redis.isCoalesceRoundTrips());
        return builder.build();
    }

    /**
     * Checks {@code dlock.redis.*} before any bean is created (see {@link EarlyPropertiesCheck}), unless the
     * application brings its own store, which these values do not configure.
     */
    @Bean
    static EarlyPropertiesCheck dlockRedisPropertiesCheck(Environment environment) {
        return new EarlyPropertiesCheck(beanFactory -> {
            // A condition on this method would see the stores declared above, and decide on them instead.
            if (beanFactory.containsBeanDefinition(REDIS_BACKEND) || beanFactory.containsBeanDefinition(REDLOCK_BACKEND)) {
                RedisConnectionSettings.check(EarlyPropertiesCheck.bind(environment, RedisStoreProperties.PREFIX, RedisStoreProperties.class));
            }
        });
    }

    /**
     * dlock.verify-on-start for the Redis stores: a PING (Redlock: a quorum of masters answering), failing
     * with the properties that say where Redis is, or the application's client when dlock locks with that.
     */
    @Bean
    StoreStartupCheck dlockRedisStartupCheck(ObjectProvider<RedisConnectionSettings> settings, ListableBeanFactory beans) {
        return backend -> {
            if (backend instanceof RedlockBackend) {
                StoreStartupCheck.ping(backend, e -> StoreStartupCheck.failed("dlock cannot use the Redlock masters of "
                        + PREFIX + ".redis.redlock.nodes: " + e.getMessage(),
                        "Check " + PREFIX + ".redis.redlock.nodes: most of the masters must be running and let dlock's user in.", e));
                return true;
            }
            if (!(backend instanceof RedisLockBackend)) {
                return false;
            }
            // The settings say where the store is only when it is this configuration's store over its own client.
            RedisConnectionSettings where = StoreStartupCheck.isBean(beans, REDIS_BACKEND, backend) ? settings.getIfAvailable() : null;
            StoreStartupCheck.ping(backend, e -> where != null
                    ? StoreStartupCheck.failed(where.cannotUse(e), where.checkAdvice(), e)
                    : StoreStartupCheck.failed("dlock cannot use Redis through the application's client: " + e.getMessage(),
                            "Check the application's Redis client dlock locks with (the UnifiedJedis bean marked "
                                    + "@DlockRedisClient or named " + DlockRedisClient.BEAN_NAME + ", or its own LockBackend bean).", e));
            return true;
        };
    }

    /** Turns {@code property=bundleName} into the bundle, failing naming the property. */
    private static Function<String, SslBundle> sslBundles(ObjectProvider<SslBundles> sslBundles) {
        return reference -> {
            String property = reference.substring(0, reference.indexOf('='));
            String name = reference.substring(reference.indexOf('=') + 1);
            SslBundles bundles = sslBundles.getIfAvailable();
            if (bundles == null) {
                throw new IllegalStateException(property + " names SSL bundle '" + name
                        + "', but the application has no SslBundles (Spring Boot's SSL auto-configuration)");
            }
            try {
                return bundles.getBundle(name);
            } catch (RuntimeException e) {
                // The cause may quote key store details; the message names the property and bundle only.
                throw new IllegalStateException(property + " names SSL bundle '" + name + "', which cannot be used: "
                        + e.getClass().getSimpleName(), e);
            }
        };
    }

    /**
     * Hands the key prefix to a Redis store's builder: {@code dlock.redis.key-prefix}, else the
     * deprecated {@code dlock.key-prefix}, else the builder's default; a refused value names the property used.
     */
    @SuppressWarnings("removal")
    private static void applyKeyPrefix(DistributedLockProperties properties, RedisStoreProperties redis, Function<String, ?> keyPrefix) {
        String redisPrefix = redis.getKeyPrefix();
        if (redisPrefix != null) {
            set(RedisStoreProperties.PREFIX + ".key-prefix", () -> keyPrefix.apply(redisPrefix));
            return;
        }
        String deprecated = properties.getKeyPrefix();
        if (deprecated != null) {
            log.warn("{}.key-prefix is deprecated; use {}.key-prefix", PREFIX, RedisStoreProperties.PREFIX);
            set(PREFIX + ".key-prefix", () -> keyPrefix.apply(deprecated));
        }
    }
}
