package dev.dlock.boot;

import java.util.function.Consumer;

import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

/**
 * Checks {@code dlock.*} values once the bean definitions are known and before any bean is created.
 * A refused value then stops the start by itself. Checked later, it would surface from inside the
 * creation of the first {@code @DistributedLock} bean, where Spring builds the aspect (and with it the
 * lock manager and the store) while it sorts advisors, and reports "Advisor sorting failed" first.
 */
final class EarlyPropertiesCheck implements BeanFactoryPostProcessor {

    private final Consumer<ConfigurableListableBeanFactory> check;

    /** A check of the values, given the bean definitions; it throws to stop the start. */
    EarlyPropertiesCheck(Consumer<ConfigurableListableBeanFactory> check) {
        this.check = check;
    }

    /** The {@code dlock.*} values as the properties bean will be bound later. */
    static DistributedLockProperties dlock(Environment environment) {
        return bind(environment, DistributedLockProperties.PREFIX, DistributedLockProperties.class);
    }

    /** The values under {@code prefix} as the properties bean of {@code type} will be bound later (a store's own settings). */
    static <T> T bind(Environment environment, String prefix, Class<T> type) {
        return Binder.get(environment).bindOrCreate(prefix, type);
    }

    @Override
    public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
        check.accept(beanFactory);
    }
}
