package dev.dlock.boot;

import org.springframework.util.ClassUtils;

import java.util.List;

/**
 * What the auto-configuration knows of one store's module, given by its {@link DistributedLockProperties.Store}
 * constant: which classes mean the module and its client are on the class path, its properties, its
 * auto-configuration and its starter. Store detection, the store condition, the unknown-property check, the
 * no-store message and the metadata test all read it, so a new store is one constant there (plus its
 * auto-configuration, listed in {@code AutoConfiguration.imports}; {@code StoreModulesTest} checks that).
 *
 * @param artifact the store module's artifact id, such as {@code dlock-redis}; its starters add
 *        {@code -spring-boot-starter} or {@code -spring-boot3-starter}
 * @param propertiesPrefix the prefix of the store's own properties, such as {@code dlock.redis}
 * @param properties the class those properties bind to
 * @param propertiesNeedModule whether that class can only be bound with the module present (it takes its defaults
 *        from the module); without the module its prefix is then left unchecked
 * @param autoConfiguration the name of the store's auto-configuration class
 * @param markers the classes whose presence means the module and its client are there
 */
record StoreModule(String artifact, String propertiesPrefix, Class<?> properties, boolean propertiesNeedModule,
                   String autoConfiguration, List<String> markers) {

    /** A store without a module of its own (in memory: part of the store-neutral starter). */
    static final StoreModule NONE = new StoreModule(null, null, null, false, null, List.of());

    StoreModule(String artifact, String propertiesPrefix, Class<?> properties, boolean propertiesNeedModule,
                String autoConfiguration, String... markers) {
        this(artifact, propertiesPrefix, properties, propertiesNeedModule, autoConfiguration, List.of(markers));
    }

    /** Whether this store has a module of its own. */
    boolean exists() {
        return artifact != null;
    }

    /** Whether the module and its client are on {@code classLoader}'s class path. */
    boolean isPresent(ClassLoader classLoader) {
        return exists() && markers.stream().allMatch(name -> ClassUtils.isPresent(name, classLoader));
    }

    /** Whether the properties class can be bound on {@code classLoader}'s class path. */
    boolean propertiesBind(ClassLoader classLoader) {
        return properties != null && (!propertiesNeedModule || isPresent(classLoader));
    }

    /** The starter to add, as {@code group:artifact}, for the Spring Boot version running ({@code 3.x}: the -boot3- starter). */
    String starter(String bootVersion) {
        boolean boot3 = bootVersion != null && bootVersion.startsWith("3.");
        return "dev.dlock:" + artifact + (boot3 ? "-spring-boot3-starter" : "-spring-boot-starter");
    }
}
