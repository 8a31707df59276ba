package dev.dlock.aspect;

import org.springframework.core.MethodParameter;
import org.springframework.util.ClassUtils;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Kotlin suspend functions under {@code @DistributedLock}. Spring AOP (6.1 on) calls a suspend function's innermost
 * invocation through {@code CoroutinesUtils.invokeSuspendingFunction}, which hands the advice a cold {@code Mono} (a
 * {@code Flux} for a {@code Flow} result) whose subscription runs the coroutine; the proxy then awaits that publisher
 * for the caller. So the aspect locks a suspend function exactly as a {@code Mono}-returning method: held from the
 * subscription until the coroutine completes, fails or is cancelled. No Kotlin type is named here: the continuation
 * is an {@code Object}, and the coroutine element binding {@link LockContext} comes from dlock-kotlin.
 */
final class SuspendingLocks {

    private static final String CONTINUATION = "kotlin.coroutines.Continuation";
    private static final String FLOW = "kotlinx.coroutines.flow.Flow";

    private SuspendingLocks() {
    }

    /** Kotlin compiles {@code suspend fun f(x)} to {@code Object f(x, Continuation)}. */
    static boolean isSuspending(Method method) {
        Class<?>[] parameters = method.getParameterTypes();
        return parameters.length > 0 && parameters[parameters.length - 1].getName().equals(CONTINUATION);
    }

    /** The parameter types the Kotlin caller sees: all but the continuation. */
    static Class<?>[] userParameterTypes(Method method) {
        Class<?>[] parameters = method.getParameterTypes();
        return isSuspending(method) ? Arrays.copyOf(parameters, parameters.length - 1) : parameters;
    }

    /** The arguments the Kotlin caller passed: all but the continuation. */
    static Object[] userArguments(Object[] args) {
        return Arrays.copyOf(args, args.length - 1);
    }

    /**
     * The artifacts missing for Spring to run a suspend function as a coroutine and for the lock to follow it, empty
     * when all are there: without kotlinx-coroutines-reactor the proxy would hand the caller the {@code Mono} itself,
     * and without kotlin-reflect Spring cannot call the function at all.
     */
    static List<String> missingArtifacts() {
        ClassLoader loader = SuspendingLocks.class.getClassLoader();
        List<String> missing = new ArrayList<>();
        if (!ClassUtils.isPresent("kotlinx.coroutines.reactor.MonoKt", loader)
                || !ClassUtils.isPresent("reactor.core.publisher.Mono", loader)) {
            missing.add("org.jetbrains.kotlinx:kotlinx-coroutines-reactor");
        }
        if (!ClassUtils.isPresent("kotlin.reflect.full.KClasses", loader)) {
            missing.add("org.jetbrains.kotlin:kotlin-reflect");
        }
        if (Binding.INSTANCE == null) {
            missing.add("dev.dlock:dlock-kotlin");
        }
        return missing;
    }

    /** Whether the suspend function returns a {@code Flow}, which Spring turns into a {@code Flux}. Needs kotlin-reflect. */
    static boolean returnsFlow(Method method) {
        return returnType(method).getName().equals(FLOW);
    }

    /** The function's Kotlin return type ({@code String} for {@code suspend fun f(): String}). Needs kotlin-reflect. */
    static Class<?> returnType(Method method) {
        return new MethodParameter(method, -1).getParameterType();
    }

    /** {@code args} with the continuation replaced by one whose coroutine binds {@code binding} on each resumption. */
    static Object[] bindContinuation(Object[] args, CoroutineBinding.ThreadBinding binding) {
        Object[] bound = args.clone();
        bound[bound.length - 1] = Binding.INSTANCE.bind(args[args.length - 1], binding);
        return bound;
    }

    /** dlock-kotlin's binding, looked up once; null when it is not on the classpath. */
    private static final class Binding {
        static final CoroutineBinding INSTANCE = load();

        private static CoroutineBinding load() {
            Iterator<CoroutineBinding> found = ServiceLoader.load(CoroutineBinding.class, SuspendingLocks.class.getClassLoader())
                    .iterator();
            return found.hasNext() ? found.next() : null;
        }
    }
}
