package dev.dlock.aspect;

import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.EnableAspectJAutoProxy;
import org.springframework.context.annotation.ImportAware;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;

import java.util.Map;

/**
 * The Spring beans behind {@code @DistributedLock}: the support, the aspect and the startup
 * validation. Import it directly or through {@link EnableDistributedLocks}; needs a
 * {@link LockManager} bean. The property {@value #ABORT_CHECK_INTERVAL} (default
 * {@link LockRequest#DEFAULT_ABORT_CHECK_INTERVAL}) sets how often waiters re-check {@code abortIf}.
 */
@Configuration(proxyBeanMethods = false)
@EnableAspectJAutoProxy
public class DistributedLockConfiguration implements ImportAware {

    /** The property that sets how often waiters re-check {@code abortIf}. */
    public static final String ABORT_CHECK_INTERVAL = "dlock.abort-check-interval";
    /** The property giving the default of {@code whenLeaseLost} ({@code true}: stop the work), as Spring Boot names it. */
    public static final String STOP_WORK_ON_LEASE_LOST = "dlock.stop-work-on-lease-lost";

    private int order = DistributedLockAspect.DEFAULT_ORDER;

    /** Reads the order from {@link EnableDistributedLocks}, when imported through it. */
    @Override
    public void setImportMetadata(AnnotationMetadata importMetadata) {
        Map<String, Object> attributes = importMetadata.getAnnotationAttributes(EnableDistributedLocks.class.getName());
        if (attributes != null) {
            this.order = (Integer) attributes.get("order");
        }
    }

    /** The support that does the locking, with {@code @bean} references and {@code ${...}} placeholders resolved. */
    @Bean
    public LockAspectSupport lockAspectSupport(LockManager lockManager, BeanFactory beanFactory, Environment environment) {
        LockAspectSupport.Builder builder = LockAspectSupport.builder(lockManager)
                .beanFactory(beanFactory)
                .placeholderResolver(environment::resolveRequiredPlaceholders)
                .stopWorkOnLeaseLost(environment.getProperty(STOP_WORK_ON_LEASE_LOST, Boolean.class, false));
        String interval = environment.getProperty(ABORT_CHECK_INTERVAL);
        if (interval != null) {
            try {
                builder.abortCheckInterval(LockDurations.parse(interval));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(ABORT_CHECK_INTERVAL + "=" + interval + " is invalid: " + e.getMessage(), e);
            }
        }
        return builder.build();
    }

    /** The aspect, proxied by Spring AOP. */
    @Bean
    public DistributedLockAspect distributedLockAspect(LockAspectSupport lockAspectSupport) {
        DistributedLockAspect aspect = new DistributedLockAspect(lockAspectSupport);
        aspect.setOrder(order);
        return aspect;
    }

    /** Fails the start when an annotation is invalid. */
    @Bean
    public DistributedLockAnnotationValidator distributedLockAnnotationValidator(LockAspectSupport lockAspectSupport) {
        return new DistributedLockAnnotationValidator(lockAspectSupport.operationSource());
    }
}
