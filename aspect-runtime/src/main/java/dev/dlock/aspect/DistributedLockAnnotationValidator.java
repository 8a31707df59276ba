package dev.dlock.aspect;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.aop.framework.autoproxy.AutoProxyUtils;
import org.springframework.util.ClassUtils;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Checks every {@code @DistributedLock} method of every bean when the context starts, and fails
 * the start listing each invalid annotation by class, method and attribute.
 *
 * <p>It runs where the aspect is a Spring AOP bean, so it also keeps what a proxy cannot lock from
 * running unlocked in silence: a private, static or final locked method fails the start, and a locked
 * method the class calls through {@code this} is logged at WARN once, naming its callers. Classes woven
 * by AspectJ are locked by the woven code and pass.
 */
public class DistributedLockAnnotationValidator implements SmartInitializingSingleton, BeanFactoryAware {

    private static final Logger log = LoggerFactory.getLogger(DistributedLockAnnotationValidator.class);

    private final LockOperationSource operations;
    private ListableBeanFactory beanFactory;

    /** Creates a validator that checks through (and warms) {@code operations}. */
    public DistributedLockAnnotationValidator(LockOperationSource operations) {
        this.operations = Objects.requireNonNull(operations, "operations");
    }

    /** Receives the bean factory whose beans are checked. */
    @Override
    public void setBeanFactory(BeanFactory beanFactory) {
        if (beanFactory instanceof ListableBeanFactory listable) {
            this.beanFactory = listable;
        }
    }

    /**
     * Validates every bean's class.
     *
     * @throws LockAnnotationException listing every invalid annotation
     */
    @Override
    public void afterSingletonsInstantiated() {
        if (beanFactory == null) {
            return;
        }
        Set<Class<?>> checked = new LinkedHashSet<>();
        List<String> problems = new ArrayList<>();
        for (String name : beanFactory.getBeanDefinitionNames()) {
            Class<?> type = targetClass(name);
            if (type != null && checked.add(ClassUtils.getUserClass(type))) {
                Class<?> userClass = ClassUtils.getUserClass(type);
                Class<?> beanType = beanFactory.getType(name, false);
                // An interface-based proxy reaches the methods of the interfaces it implements, final ones too.
                Class<?>[] proxiedInterfaces = beanType != null && Proxy.isProxyClass(beanType) ? beanType.getInterfaces() : new Class<?>[0];
                problems.addAll(operations.validate(userClass));
                problems.addAll(ProxyLimits.unreachable(userClass, proxiedInterfaces));
                warnOfSelfInvocations(userClass, proxiedInterfaces);
            }
        }
        if (!problems.isEmpty()) {
            throw new LockAnnotationException(problems.size() + " invalid @DistributedLock annotation(s):\n  "
                    + String.join("\n  ", problems));
        }
    }

    /**
     * The class of the bean's object: behind an interface-based (JDK) proxy, which is what {@code getType} answers and
     * which carries no annotations, the class the proxy creator recorded for it.
     */
    private Class<?> targetClass(String beanName) {
        if (beanFactory instanceof ConfigurableListableBeanFactory configurable && configurable.containsBeanDefinition(beanName)) {
            Object target = configurable.getMergedBeanDefinition(beanName).getAttribute(AutoProxyUtils.ORIGINAL_TARGET_CLASS_ATTRIBUTE);
            if (target instanceof Class<?> targetClass) {
                return targetClass;
            }
        }
        return beanFactory.getType(beanName, false);
    }

    private static void warnOfSelfInvocations(Class<?> userClass, Class<?>[] proxiedInterfaces) {
        for (Map.Entry<Method, Set<String>> selfInvoked : ProxyLimits.selfInvoked(userClass, proxiedInterfaces).entrySet()) {
            log.warn("dlock: @DistributedLock method {} is called through 'this' by {}: such a call does not pass the "
                            + "Spring proxy, so it runs without the lock. Call it through the proxy (from another bean, or "
                            + "through this bean injected into itself), or use AspectJ weaving ({})",
                    LockOperationSource.describe(selfInvoked.getKey()), String.join(", ", selfInvoked.getValue()),
                    ProxyLimits.WEAVING_DOCS);
        }
    }
}
