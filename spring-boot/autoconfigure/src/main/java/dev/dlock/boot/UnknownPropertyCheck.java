package dev.dlock.boot;

import dev.dlock.boot.DistributedLockProperties.Store;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.bind.AbstractBindHandler;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.boot.context.properties.source.UnboundElementsSourceFilter;
import org.springframework.context.EnvironmentAware;
import org.springframework.core.env.Environment;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Fails the start on a {@code dlock.*} property that no dlock setting has: a misspelt name such as
 * {@code dlock.redis.ulr} would otherwise be ignored, and dlock would lock wherever its fallbacks point.
 * Runs before any bean is created, so nothing connects first. The names are the ones dlock's properties
 * classes bind, found by binding them (a bad value is left to the real binding to report). Environment
 * variables and JVM system properties are not checked, as Spring Boot does not check them for
 * {@code ignoreUnknownFields = false}: a {@code DLOCK_*} variable or {@code -Ddlock.*} flag may belong to another tool.
 */
class UnknownPropertyCheck implements BeanFactoryPostProcessor, EnvironmentAware {

    private static final ConfigurationPropertyName DLOCK = ConfigurationPropertyName.of(DistributedLockProperties.PREFIX);

    private Environment environment;

    /** Receives the environment whose dlock properties are checked. */
    @Override
    public void setEnvironment(Environment environment) {
        this.environment = environment;
    }

    /** Checks the environment before any bean is created. */
    @Override
    public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
        List<String> unknown = unknown(environment);
        if (!unknown.isEmpty()) {
            // A startup exception, as a bad value's: Boot's failure report shows it, not a stack trace.
            throw new DistributedLockStartupException("dlock has no propert" + (unknown.size() == 1 ? "y " : "ies ")
                    + String.join(", ", unknown) + ": a misspelt name is ignored, and dlock would lock with its defaults "
                    + "or fallbacks instead (for Redis: spring.data.redis.*, else localhost:6379)",
                    "Fix the name; the dlock.* properties are listed in docs/spring-boot.md and in your IDE's completion.", null);
        }
    }

    /**
     * The {@code dlock.*} names set in {@code environment} (outside environment variables and system properties) that
     * no dlock setting binds, with their origins.
     */
    static List<String> unknown(Environment environment) {
        return unknown(environment, UnknownPropertyCheck.class.getClassLoader());
    }

    /**
     * As {@link #unknown(Environment)}, with the store modules on {@code classLoader}'s class path: a store's properties
     * class that takes its defaults from its module (JDBC, memcached) is bound only with that module, and without
     * it the names under its prefix are left alone.
     */
    static List<String> unknown(Environment environment, ClassLoader classLoader) {
        Binder binder = Binder.get(environment);
        Recorder recorder = new Recorder();
        binder.bind(DLOCK, Bindable.of(DistributedLockProperties.class), recorder);
        List<ConfigurationPropertyName> unchecked = new ArrayList<>();
        for (Store store : Store.values()) {
            StoreModule module = store.module();
            if (module.propertiesBind(classLoader)) {
                binder.bind(module.propertiesPrefix(), Bindable.of(module.properties()), recorder);
            } else if (module.exists()) {
                unchecked.add(ConfigurationPropertyName.of(module.propertiesPrefix()));
            }
        }
        Set<String> unknown = new LinkedHashSet<>();
        UnboundElementsSourceFilter checked = new UnboundElementsSourceFilter();
        for (ConfigurationPropertySource source : ConfigurationPropertySources.get(environment)) {
            if (!(source instanceof IterableConfigurationPropertySource iterable) || !checked.apply(source)) {
                continue;
            }
            iterable.filter(DLOCK::isAncestorOf).stream()
                    .filter(name -> !recorder.binds(name) && unchecked.stream().noneMatch(prefix -> prefix.isAncestorOf(name)))
                    .forEach(name -> unknown.add(withOrigin(source, name)));
        }
        return List.copyOf(unknown);
    }

    private static String withOrigin(ConfigurationPropertySource source, ConfigurationPropertyName name) {
        ConfigurationProperty property = source.getConfigurationProperty(name);
        return property != null && property.getOrigin() != null ? name + " (" + property.getOrigin() + ")" : name.toString();
    }

    /** Records every name a properties class took a value for, or tried to (a bad value is still a known name). */
    private static final class Recorder extends AbstractBindHandler {
        private final List<ConfigurationPropertyName> bound = new ArrayList<>();

        @Override
        public Object onSuccess(ConfigurationPropertyName name, Bindable<?> target, BindContext context, Object result) {
            bound.add(name);
            return super.onSuccess(name, target, context, result);
        }

        @Override
        public Object onFailure(ConfigurationPropertyName name, Bindable<?> target, BindContext context, Exception error) {
            bound.add(name);
            return null;
        }

        /** Whether {@code name}, or the list it is an element of ({@code nodes[0]}), was bound. */
        boolean binds(ConfigurationPropertyName name) {
            ConfigurationPropertyName property = name;
            while (property.getNumberOfElements() > 1 && property.isLastElementIndexed()) {
                property = property.getParent();
            }
            return bound.contains(property);
        }
    }
}
