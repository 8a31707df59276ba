package dev.dlock.aspect;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import org.springframework.core.KotlinDetector;
import org.springframework.util.ClassUtils;

/**
 * What a Spring AOP proxy cannot lock: a private, static or final {@code @DistributedLock} method never
 * reaches the proxy, and a call through {@code this} passes it by. A method woven by AspectJ (ajc or
 * load-time weaving) is locked by the woven code itself, so none of this applies to it.
 */
final class ProxyLimits {

    /** Where the way out is documented. */
    static final String WEAVING_DOCS =
            "https://github.com/dlock-dev/dlock/blob/main/docs/annotation.md#without-spring-aop-compile-time-weaving";

    private ProxyLimits() {
    }

    /**
     * One message per locked method of {@code userClass} that its proxy cannot intercept and no weaving locks; with
     * {@code proxiedInterfaces}, the interfaces of an interface-based (JDK) proxy, which reaches a final method through
     * the interface method it implements.
     */
    static List<String> unreachable(Class<?> userClass, Class<?>[] proxiedInterfaces) {
        List<String> problems = new ArrayList<>();
        for (Method method : LockOperationSource.lockedMethods(userClass)) {
            String modifier = unreachableBecause(method, proxiedInterfaces);
            if (modifier != null && !isWoven(method)) {
                problems.add("Invalid @DistributedLock on " + LockOperationSource.describe(method) + ": it is " + modifier
                        + "; private, static and final methods cannot be intercepted by a Spring proxy, so it would run "
                        + "without the lock: " + remedy(method, modifier) + ", or use AspectJ weaving (" + WEAVING_DOCS + ")");
            }
        }
        return problems;
    }

    /**
     * The locked methods of {@code userClass} that its own code calls through {@code this}, each with those
     * callers; empty for a woven class, whose self-invocations are locked.
     */
    static Map<Method, Set<String>> selfInvoked(Class<?> userClass, Class<?>[] proxiedInterfaces) {
        List<Method> interceptable = new ArrayList<>();
        for (Method method : LockOperationSource.lockedMethods(userClass)) {
            if (isWoven(method)) {
                return Map.of();
            }
            if (unreachableBecause(method, proxiedInterfaces) == null) {
                interceptable.add(method);
            }
        }
        return interceptable.isEmpty() ? Map.of() : SelfInvocationFinder.find(userClass, interceptable);
    }

    /** What to change: a Kotlin function is final unless declared {@code open}, which the kotlin-spring plugin does for Spring beans. */
    private static String remedy(Method method, String modifier) {
        if ("final".equals(modifier) && KotlinDetector.isKotlinType(method.getDeclaringClass())) {
            return "declare it `open` or apply the kotlin-spring plugin (Kotlin functions and classes are final unless `open`)";
        }
        return "make it a public, non-static, non-final method";
    }

    private static String unreachableBecause(Method method, Class<?>[] proxiedInterfaces) {
        int modifiers = method.getModifiers();
        if (Modifier.isPrivate(modifiers)) {
            return "private";
        }
        if (Modifier.isStatic(modifiers)) {
            return "static";
        }
        return Modifier.isFinal(modifiers) && !declaredByOneOf(method, proxiedInterfaces) ? "final" : null;
    }

    private static boolean declaredByOneOf(Method method, Class<?>[] interfaces) {
        for (Class<?> type : interfaces) {
            if (ClassUtils.hasMethod(type, method.getName(), method.getParameterTypes())) {
                return true;
            }
        }
        return false;
    }

    /** ajc moves the body of a method it wraps in around advice to {@code <name>_aroundBody<n>} in the same class. */
    private static boolean isWoven(Method method) {
        Pattern body = Pattern.compile(Pattern.quote(method.getName()) + "_aroundBody\\d+");
        for (Method declared : method.getDeclaringClass().getDeclaredMethods()) {
            if (body.matcher(declared.getName()).matches()) {
                return true;
            }
        }
        return false;
    }
}
