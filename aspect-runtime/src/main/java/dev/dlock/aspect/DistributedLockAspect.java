package dev.dlock.aspect;

import org.aspectj.lang.ProceedingJoinPoint;
import org.aspectj.lang.annotation.Around;
import org.aspectj.lang.annotation.Aspect;
import org.aspectj.lang.reflect.MethodSignature;
import org.springframework.aop.aspectj.MethodInvocationProceedingJoinPoint;
import org.springframework.core.Ordered;

import java.util.Objects;

/**
 * Runs every {@code @DistributedLock} method under its lock; the work is done by
 * {@link LockAspectSupport}.
 *
 * <p>Spring AOP: register it as a bean constructed with a {@link LockAspectSupport} (or import
 * {@link DistributedLockConfiguration}). AspectJ compile-time weaving (the aspect is on ajc's
 * aspect path): woven code reaches the singleton through {@link #aspectOf()}; configure it once at
 * startup with {@link #configureWoven(LockAspectSupport)}.
 *
 * <p>Its default {@link #DEFAULT_ORDER} runs it outside {@code @Transactional} (whose default
 * order is {@link Ordered#LOWEST_PRECEDENCE}), so the lock is released after the commit.
 */
@Aspect
public class DistributedLockAspect implements Ordered {

    /** Higher precedence than the transaction advisor's default: the lock wraps the transaction. */
    public static final int DEFAULT_ORDER = Ordered.LOWEST_PRECEDENCE - 100;

    /**
     * The instance woven code uses. This class is compiled by javac, so ajc does not add
     * {@code aspectOf()}; it is declared here with the signature woven code calls.
     */
    private static final DistributedLockAspect WOVEN = new DistributedLockAspect();

    private volatile LockAspectSupport support;
    private volatile int order = DEFAULT_ORDER;

    /** Creates an unconfigured aspect; AspectJ uses this constructor. */
    public DistributedLockAspect() {
    }

    /** Creates an aspect that locks through {@code support}. */
    public DistributedLockAspect(LockAspectSupport support) {
        this.support = Objects.requireNonNull(support, "support");
    }

    /** The singleton that compile-time woven code calls; a Spring AOP context uses its own bean instead. */
    public static DistributedLockAspect aspectOf() {
        return WOVEN;
    }

    /** Always true: the woven singleton exists from class initialisation on. */
    public static boolean hasAspect() {
        return true;
    }

    /** Configures the AspectJ-woven aspect: call once at startup, before the first locked call. */
    public static void configureWoven(LockAspectSupport support) {
        WOVEN.configure(support);
    }

    /** Sets (or replaces) the support locks are taken through. */
    public void configure(LockAspectSupport support) {
        this.support = Objects.requireNonNull(support, "support");
    }

    /** Wraps one call of a {@code @DistributedLock} method. */
    @Around("execution(@dev.dlock.annotation.DistributedLock * *(..))")
    public Object aroundLockedMethod(ProceedingJoinPoint joinPoint) throws Throwable {
        LockAspectSupport current = support;
        if (current == null) {
            throw new IllegalStateException("DistributedLockAspect is not configured: call "
                    + "DistributedLockAspect.configureWoven(LockAspectSupport.builder(lockManager).build()) at startup");
        }
        MethodSignature signature = (MethodSignature) joinPoint.getSignature();
        if (!(joinPoint instanceof MethodInvocationProceedingJoinPoint) && SuspendingLocks.isSuspending(signature.getMethod())) {
            // Woven code proceeds into the bare function, which returns at its first suspension: nothing to hold the lock to.
            throw new IllegalStateException("@DistributedLock on the suspend function " + LockOperationSource.describe(
                    signature.getMethod()) + " works through Spring AOP proxies only, not AspectJ weaving");
        }
        Object[] args = joinPoint.getArgs();
        // proceed(args) copies the invocation in Spring AOP: only a call whose arguments changed (a fencing token
        // parameter) pays for it.
        return current.invoke(signature.getMethod(), joinPoint.getTarget(), args,
                given -> given == args ? joinPoint.proceed() : joinPoint.proceed(given));
    }

    /** The aspect's order among advisors: lower runs further outside. */
    @Override
    public int getOrder() {
        return order;
    }

    /** Sets the aspect's order; keep it lower than the transaction advisor's so the lock wraps the transaction. */
    public void setOrder(int order) {
        this.order = order;
    }
}
