package dev.dlock.aspect;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Checks every {@code @DistributedLock} method of every bean when the context starts, and fails
 * the start listing each invalid annotation by class, method and attribute.
 */
public class DistributedLockAnnotationValidator implements SmartInitializingSingleton, BeanFactoryAware {

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
            Class<?> type = beanFactory.getType(name, false);
            if (type != null && checked.add(type)) {
                problems.addAll(operations.validate(type));
            }
        }
        if (!problems.isEmpty()) {
            throw new LockAnnotationException(problems.size() + " invalid @DistributedLock annotation(s):\n  "
                    + String.join("\n  ", problems));
        }
    }
}
