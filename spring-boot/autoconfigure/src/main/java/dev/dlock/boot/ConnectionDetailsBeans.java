package dev.dlock.boot;

import org.springframework.beans.factory.ListableBeanFactory;

import java.util.Arrays;
import java.util.List;

/** Finds the application's connection details bean of a Spring Boot line's type, leaving out Boot's own view of its properties. */
final class ConnectionDetailsBeans {

    private ConnectionDetailsBeans() {
    }

    /**
     * The name of the one bean of {@code type} that does not merely restate {@code spring.data.redis.*}
     * (dlock reads those properties itself); null when there is none; fails when there are several.
     */
    static String single(ListableBeanFactory beans, Class<?> type) {
        List<String> names = Arrays.stream(beans.getBeanNamesForType(type, true, false))
                .filter(name -> !isBootsPropertiesView(beans.getType(name, false)))
                .toList();
        if (names.size() > 1) {
            throw new IllegalStateException("dlock found " + names.size() + " Redis connection details beans " + names
                    + "; keep one, or set dlock.redis.url, or define the client dlock uses as a bean named "
                    + DlockRedisClient.BEAN_NAME);
        }
        return names.isEmpty() ? null : names.get(0);
    }

    /** How messages and logs name the bean, without its contents (they may hold a password). */
    static String describe(String name, Object details) {
        return "Redis connection details bean '" + name + "' (" + details.getClass().getName() + ")";
    }

    private static boolean isBootsPropertiesView(Class<?> type) {
        return type != null && type.getName().startsWith("org.springframework.boot.")
                && type.getSimpleName().startsWith("Properties");
    }
}
