package dev.dlock.boot;

import java.util.Set;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;
import org.springframework.util.ClassUtils;

/**
 * Tells Spring Boot that {@link JdbcLockSchemaInitializer} beans initialize the database, so that beans which depend
 * on database initialization (the JDBC lock store among them) wait for them. Ordered after Boot's detectors of
 * Flyway and Liquibase (order 0 and 1), whose migrations therefore run first: Flyway refuses a schema that already
 * holds tables when it has no history table yet.
 */
class JdbcLockSchemaInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {

    /** After Flyway (0, its migration initializer 1) and Liquibase (0); before script initialization (spring.sql.init). */
    static final int ORDER = 10;

    /** The initializer's type, only with dlock-jdbc present (Boot asks every detector listed, whatever the store). */
    @Override
    protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
        return ClassUtils.isPresent("dev.dlock.jdbc.JdbcLockBackend", getClass().getClassLoader())
                ? Set.of(JdbcLockSchemaInitializer.class) : Set.of();
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
