package dev.dlock.aspect;

import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * The reflection a native image needs for {@code @DistributedLock} whatever the application: the expressions' root
 * object ({@code #root.methodName}, {@code #root.args}, ...) and the aspect's advice method, which Spring AOP invokes
 * reflectively. The types of the locked methods' parameters are hinted per bean by
 * {@link DistributedLockBeanRegistrationAotProcessor}. Listed in {@code META-INF/spring/aot.factories}.
 */
public class DistributedLockRuntimeHints implements RuntimeHintsRegistrar {

    /** Registers the hints. */
    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        hints.reflection().registerType(LockExpressionRoot.class, MemberCategory.INVOKE_PUBLIC_METHODS);
        // Spring AOP finds advice among the declared methods and invokes the public one.
        hints.reflection().registerType(DistributedLockAspect.class, MemberCategory.INVOKE_DECLARED_METHODS,
                MemberCategory.INVOKE_PUBLIC_METHODS);
    }
}
