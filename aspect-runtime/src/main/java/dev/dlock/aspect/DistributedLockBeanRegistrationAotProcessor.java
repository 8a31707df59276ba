package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.OnFailure;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.ReflectionHints;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * At build time (Spring AOT), registers the reflection the {@code @DistributedLock} methods of a bean need at run time
 * in a native image: their SpEL expressions read the arguments through public methods ({@code #order.id} calls
 * {@code Order.id()} or {@code getId()}), so each parameter type gets {@code INVOKE_PUBLIC_METHODS} and its record
 * accessors, and so do the types its getters return, one level deep; fallback methods, invoked reflectively, are
 * registered too. JDK types ({@code java.*}) and deeper paths are left to the application. Listed in
 * {@code META-INF/spring/aot.factories}.
 */
public class DistributedLockBeanRegistrationAotProcessor implements BeanRegistrationAotProcessor {

    private static final Logger log = LoggerFactory.getLogger(DistributedLockBeanRegistrationAotProcessor.class);

    /** The hints for {@code registeredBean}'s locked methods, or null when it has none. */
    @Override
    public BeanRegistrationAotContribution processAheadOfTime(RegisteredBean registeredBean) {
        Class<?> beanClass = ClassUtils.getUserClass(registeredBean.getBeanClass());
        List<Method> locked;
        try {
            locked = LockOperationSource.lockedMethods(beanClass);
        } catch (LinkageError e) {
            // A bean class whose methods name a class the build does not have: nothing of ours to find there.
            log.debug("dlock: cannot read the methods of {} for AOT hints: {}", beanClass.getName(), e.toString());
            return null;
        }
        if (locked.isEmpty()) {
            return null;
        }
        return (generationContext, code) -> registerHints(generationContext.getRuntimeHints().reflection(), beanClass, locked);
    }

    /** Registers the hints of {@code beanClass}'s {@code @DistributedLock} methods. */
    static void registerHints(ReflectionHints hints, Class<?> beanClass, List<Method> locked) {
        Set<Class<?>> types = new LinkedHashSet<>();
        for (Method method : locked) {
            for (Class<?> parameter : method.getParameterTypes()) {
                Class<?> type = elementType(parameter);
                if (isHinted(type) && types.add(type)) {
                    getterTypes(type).forEach(types::add);
                }
            }
            registerFallbacks(hints, method, beanClass);
        }
        for (Class<?> type : types) {
            hints.registerType(type, MemberCategory.INVOKE_PUBLIC_METHODS);
            if (type.isRecord()) {
                for (RecordComponent component : type.getRecordComponents()) {
                    hints.registerMethod(component.getAccessor(), ExecutableMode.INVOKE);
                }
            }
        }
    }

    private static void registerFallbacks(ReflectionHints hints, Method method, Class<?> beanClass) {
        Method specific = AopUtils.getMostSpecificMethod(method, beanClass);
        DistributedLock annotation = AnnotatedElementUtils.findMergedAnnotation(specific, DistributedLock.class);
        if (annotation == null || annotation.onFailure() != OnFailure.FALLBACK || annotation.fallback().isBlank()) {
            return;
        }
        // Both shapes, with and without the failure as last argument: the aspect picks one at run time.
        for (boolean withFailure : new boolean[] {true, false}) {
            Method fallback = LockOperationSource.findFallback(specific, beanClass, annotation.fallback(), withFailure);
            if (fallback != null) {
                hints.registerMethod(fallback, ExecutableMode.INVOKE);
            }
        }
    }

    /** The non-JDK types {@code type}'s getters and record accessors return. */
    private static Set<Class<?>> getterTypes(Class<?> type) {
        Set<Class<?>> found = new LinkedHashSet<>();
        for (Method method : type.getMethods()) {
            if (method.getParameterCount() == 0 && !Modifier.isStatic(method.getModifiers())
                    && method.getDeclaringClass() != Object.class && isGetter(type, method)) {
                Class<?> returned = elementType(method.getReturnType());
                if (isHinted(returned) && returned != type) {
                    found.add(returned);
                }
            }
        }
        return found;
    }

    private static boolean isGetter(Class<?> type, Method method) {
        String name = method.getName();
        if (name.startsWith("get") && name.length() > 3 || name.startsWith("is") && name.length() > 2) {
            return true;
        }
        if (type.isRecord()) {
            for (RecordComponent component : type.getRecordComponents()) {
                if (component.getName().equals(name)) {
                    return true;
                }
            }
        }
        return false;
    }

    private static Class<?> elementType(Class<?> type) {
        Class<?> element = type;
        while (element.isArray()) {
            element = element.getComponentType();
        }
        return element;
    }

    /** The application's own types; the JDK's would drag in far more than a key reads, and primitives need nothing. */
    private static boolean isHinted(Class<?> type) {
        return !type.isPrimitive() && !type.getName().startsWith("java.") && !type.getName().startsWith("javax.");
    }
}
