package dev.dlock.boot;

import dev.dlock.boot.DistributedLockProperties.Store;
import dev.dlock.aspect.DistributedLockAnnotationValidator;
import dev.dlock.aspect.DistributedLockAspect;
import dev.dlock.aspect.LockAspectSupport;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import org.aspectj.lang.annotation.Aspect;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.env.Environment;

import static dev.dlock.boot.BuilderProperty.set;
import static dev.dlock.boot.DistributedLockProperties.PREFIX;

/**
 * Makes {@code @DistributedLock} work in a Spring Boot application, whatever the store: the lock
 * manager over the application's {@link LockBackend} (one per store comes from that store's
 * auto-configuration, such as {@link RedisLockStoreAutoConfiguration}; {@code dlock.store=in-memory}
 * gives the in-memory store here), and the aspect with its startup validation. Every bean backs off when the application
 * defines one of the same type; {@code dlock.enabled=false} turns it all off. Each {@code dlock.*}
 * value goes to the builder that owns its rule through {@link BuilderProperty}, so a refused value
 * fails the start naming the property, before any bean is created; with {@code dlock.verify-on-start}
 * the store is checked once before the application takes traffic. Spring Boot reports either failure
 * through {@link DistributedLockFailureAnalyzer}.
 */
@AutoConfiguration
@ConditionalOnClass(LockManager.class)
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".enabled", matchIfMissing = true)
@EnableConfigurationProperties(DistributedLockProperties.class)
public class DistributedLockAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(DistributedLockAutoConfiguration.class);
    private static final String LOCK_MANAGER = "dlockLockManager";

    /** Fails the start on a {@code dlock.*} property dlock does not have (a typo), before any store is contacted. */
    @Bean
    @ConditionalOnMissingBean
    static UnknownPropertyCheck dlockUnknownPropertyCheck() {
        return new UnknownPropertyCheck();
    }

    /** The in-memory store, when {@code dlock.store=in-memory}: no Redis is configured or contacted. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    @ConditionalOnLockStore(Store.IN_MEMORY)
    public InMemoryLockBackend dlockInMemoryLockBackend() {
        log.info("dlock locks in memory (dlock.store=in-memory): locks exclude threads of this instance only");
        return new InMemoryLockBackend();
    }

    /** The lock manager, reporting to every {@link LockListener} bean (metrics included). */
    @Bean(name = LOCK_MANAGER, destroyMethod = "close")
    @ConditionalOnMissingBean(LockManager.class)
    public LockManager dlockLockManager(ObjectProvider<LockBackend> backends, DistributedLockProperties properties,
                                        ObjectProvider<LockListener> listeners, Environment environment) {
        LockBackend backend = backends.getIfAvailable(() -> {
            throw noStore(environment);
        });
        LockManager.Builder builder = configure(LockManager.builder(backend), properties)
                .virtualThreads(virtualThreadsActive(environment));
        listeners.orderedStream().forEach(builder::listener);
        return builder.build();
    }

    /**
     * Closes the lock managers when the context closes, after the web server and the task executors drained and before
     * the store clients are destroyed; each waits up to its grace period ({@code dlock.shutdown.grace-period}) for the
     * holds still running, then frees what is left.
     */
    @Bean
    @ConditionalOnMissingBean
    static LockManagerLifecycle dlockLockManagerLifecycle() {
        return new LockManagerLifecycle();
    }

    /**
     * Checks the lock manager's values, and that some store will be there, before any bean is created
     * (see {@link EarlyPropertiesCheck}); the rules stay the builders', applied here to throwaway builders.
     * Nothing is checked when the application defines its own lock manager, which these values do not configure.
     */
    @Bean
    static EarlyPropertiesCheck dlockPropertiesCheck(Environment environment) {
        return new EarlyPropertiesCheck(beanFactory -> {
            // A condition on this method would see dlockLockManager, declared above, and always skip the check.
            if (!beanFactory.containsBeanDefinition(LOCK_MANAGER)) {
                return;
            }
            DistributedLockProperties properties = EarlyPropertiesCheck.dlock(environment);
            // The manager's builder needs a store; an in-memory one holds no connection and no thread.
            try (InMemoryLockBackend rulesOnly = new InMemoryLockBackend()) {
                configure(LockManager.builder(rulesOnly), properties);
            }
            set(PREFIX + ".abort-check-interval", () -> LockRequest.validAbortCheckInterval(properties.getAbortCheckInterval()));
            if (beanFactory.getBeanNamesForType(LockBackend.class, true, false).length == 0) {
                throw noStore(environment);
            }
        });
    }

    /** dlock.verify-on-start: one check of the store once every bean exists, before the application takes traffic. */
    @Bean
    @Lazy(false)
    @ConditionalOnBooleanProperty(name = PREFIX + ".verify-on-start", matchIfMissing = true)
    VerifyOnStart dlockVerifyOnStart(ObjectProvider<LockManager> lockManager, ObjectProvider<StoreStartupCheck> checks) {
        return new VerifyOnStart(lockManager, checks);
    }

    /**
     * Whether the application runs on virtual threads, as Spring Boot's own {@code Threading.VIRTUAL} decides it
     * ({@code spring.threads.virtual.enabled} on Java 21+); read here because that class moved between the Boot lines.
     */
    static boolean virtualThreadsActive(Environment environment) {
        return environment.getProperty("spring.threads.virtual.enabled", Boolean.class, false) && Runtime.version().feature() >= 21;
    }

    /** Hands the lock manager's {@code dlock.*} values to {@code builder}, each refused value naming its property. */
    private static LockManager.Builder configure(LockManager.Builder builder, DistributedLockProperties properties) {
        set(PREFIX + ".wait-time", () -> builder.waitTime(properties.getWaitTime()));
        set(PREFIX + ".lease-time", () -> builder.leaseTime(properties.getLeaseTime()));
        set(PREFIX + ".watchdog.batch-size", () -> builder.renewalBatchSize(properties.getWatchdog().getBatchSize()));
        set(PREFIX + ".on-lease-lost", () -> builder.leaseLostPolicy(properties.getOnLeaseLost()));
        set(PREFIX + ".shutdown.grace-period", () -> builder.shutdownGracePeriod(properties.getShutdown().getGracePeriod()));
        if (properties.getInstanceId() != null) {
            set(PREFIX + ".instance-id", () -> builder.instanceId(properties.getInstanceId()));
        }
        return builder.localHandOff(properties.isLocalHandOff()).lockOrderWarnings(properties.isLockOrderWarnings());
    }

    /** The chosen store has no auto-configuration (its module is missing) and the application defines no store. */
    private static DistributedLockStartupException noStore(Environment environment) {
        Store store = StoreCondition.chosen(environment, DistributedLockAutoConfiguration.class.getClassLoader());
        // Boot 3.5 applications take the -boot3- starters.
        String starter = store.module().starter(SpringBootVersion.getVersion());
        return new DistributedLockStartupException(PREFIX + ".store=" + store.id() + " needs " + starter + " on the class path",
                "Add the dependency " + starter + ", or set " + PREFIX + ".store=in-memory for locks within this JVM only, "
                        + "or define one LockBackend bean.", null);
    }

    /** The {@code @DistributedLock} aspect and its startup validation, each replaceable. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(Aspect.class)
    static class AspectConfiguration {

        /** The support that does the locking, with {@code @bean} references and {@code ${...}} placeholders resolved. */
        @Bean
        @ConditionalOnMissingBean
        LockAspectSupport lockAspectSupport(LockManager lockManager, BeanFactory beanFactory, Environment environment,
                                            DistributedLockProperties properties) {
            LockAspectSupport.Builder builder = LockAspectSupport.builder(lockManager)
                    .beanFactory(beanFactory)
                    .placeholderResolver(environment::resolveRequiredPlaceholders)
                    .stopWorkOnLeaseLost(properties.isStopWorkOnLeaseLost());
            set(PREFIX + ".abort-check-interval", () -> builder.abortCheckInterval(properties.getAbortCheckInterval()));
            return builder.build();
        }

        /** The aspect, ordered by {@code dlock.aspect.order}. */
        @Bean
        @ConditionalOnMissingBean
        DistributedLockAspect distributedLockAspect(LockAspectSupport lockAspectSupport, DistributedLockProperties properties) {
            DistributedLockAspect aspect = new DistributedLockAspect(lockAspectSupport);
            aspect.setOrder(properties.getAspect().getOrder());
            return aspect;
        }

        /** Fails the start when a {@code @DistributedLock} annotation is invalid. */
        @Bean
        @ConditionalOnMissingBean
        DistributedLockAnnotationValidator distributedLockAnnotationValidator(LockAspectSupport lockAspectSupport) {
            return new DistributedLockAnnotationValidator(lockAspectSupport.operationSource());
        }
    }
}
