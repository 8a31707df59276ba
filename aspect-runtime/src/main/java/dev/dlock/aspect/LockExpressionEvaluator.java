package dev.dlock.aspect;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.AnnotatedElementKey;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.CachedExpressionEvaluator;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.Expression;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Parses {@code @DistributedLock} expressions once per (method, target class, expression) and builds
 * the per-call evaluation context, the way Spring's cache abstraction does.
 */
final class LockExpressionEvaluator extends CachedExpressionEvaluator {

    private final Map<ExpressionKey, Expression> expressions = new ConcurrentHashMap<>(64);
    private final BeanFactoryResolver beanResolver;

    LockExpressionEvaluator(BeanFactory beanFactory) {
        this.beanResolver = beanFactory == null ? null : new BeanFactoryResolver(beanFactory);
    }

    /** The parsed expression, parsed on first use only. */
    Expression parse(AnnotatedElementKey element, String expression) {
        return getExpression(expressions, element, expression);
    }

    /** How parameter names are found (needs the {@code -parameters} compiler flag). */
    ParameterNameDiscoverer parameterNames() {
        return getParameterNameDiscoverer();
    }

    /**
     * A fresh context for one call: {@code #p0}, {@code #a0}, {@code #name} loaded lazily, {@code @bean} references.
     * A suspend function's continuation is no argument: Spring's context leaves it out itself (6.1 on), the root's
     * {@code args} here.
     */
    EvaluationContext context(Method method, Object[] args, boolean suspending, Object target, Class<?> targetClass) {
        LockExpressionRoot root = new LockExpressionRoot(method, suspending ? SuspendingLocks.userArguments(args) : args,
                target, targetClass);
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(root, method, args, getParameterNameDiscoverer());
        if (beanResolver != null) {
            context.setBeanResolver(beanResolver);
        }
        return context;
    }
}
