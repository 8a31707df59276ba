package dev.dlock.aspect;

import java.lang.reflect.Method;

/**
 * The root object of {@code @DistributedLock} expressions: {@code #root.methodName},
 * {@code #root.method}, {@code #root.args}, {@code #root.target}, {@code #root.targetClass}.
 */
public final class LockExpressionRoot {

    private final Method method;
    private final Object[] args;
    private final Object target;
    private final Class<?> targetClass;

    /** Creates the root of one call. */
    public LockExpressionRoot(Method method, Object[] args, Object target, Class<?> targetClass) {
        this.method = method;
        this.args = args;
        this.target = target;
        this.targetClass = targetClass;
    }

    /** The called method. */
    public Method getMethod() {
        return method;
    }

    /** The called method's name. */
    public String getMethodName() {
        return method.getName();
    }

    /** The call's arguments. */
    public Object[] getArgs() {
        return args;
    }

    /** The object the method is called on. */
    public Object getTarget() {
        return target;
    }

    /** The class of the object the method is called on. */
    public Class<?> getTargetClass() {
        return targetClass;
    }
}
