package dev.dlock.aspect;

import org.springframework.context.annotation.Import;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Turns on {@code @DistributedLock} in a Spring context: registers the aspect (with AspectJ
 * auto-proxying) and the startup validation. The context must have one {@code LockManager} bean.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Import(DistributedLockConfiguration.class)
public @interface EnableDistributedLocks {

    /** The aspect's order; the default runs it outside {@code @Transactional}, releasing after the commit. */
    int order() default DistributedLockAspect.DEFAULT_ORDER;
}
