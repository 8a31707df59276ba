package dev.dlock.aspect;

import org.jspecify.annotations.Nullable;
import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.FencingToken;
import dev.dlock.annotation.LockMode;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockKind;
import dev.dlock.aspect.LockOperation.ResultKind;
import dev.dlock.annotation.OnFailure;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.core.LockRequest;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.AnnotatedElementKey;
import org.springframework.core.CollectionFactory;
import org.springframework.core.MethodParameter;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.BeanReference;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Reads, validates and caches the {@code @DistributedLock} metadata of methods: one
 * {@link LockOperation} per (method, target class), methods without the annotation cached as a
 * marker, every expression parsed once.
 */
public final class LockOperationSource {

    private static final Object NO_LOCK = new Object();
    private static final Pattern INDEXED_ARGUMENT = Pattern.compile("[pa](\\d+)");
    private static final boolean REACTOR_PRESENT =
            ClassUtils.isPresent("reactor.core.publisher.Mono", LockOperationSource.class.getClassLoader());

    private final LockExpressionEvaluator evaluator;
    private final BeanFactory beanFactory;
    private final UnaryOperator<String> placeholders;
    private final Map<AnnotatedElementKey, Object> operations = new ConcurrentHashMap<>(64);
    private final LockBackend store;
    /** The kind each lock name was first declared with, and by which method: one name, one family of kinds. */
    private final Map<String, Declaration> kindsByName = new ConcurrentHashMap<>();

    private record Declaration(LockKind kind, String method) {
    }

    LockOperationSource(LockExpressionEvaluator evaluator, BeanFactory beanFactory, UnaryOperator<String> placeholders,
                        LockBackend store) {
        this.evaluator = evaluator;
        this.beanFactory = beanFactory;
        this.placeholders = placeholders;
        this.store = store;
    }

    /**
     * The lock metadata of {@code method} called on an instance of {@code targetClass}; null when
     * the method has no {@code @DistributedLock}.
     *
     * @throws LockAnnotationException when the annotation is invalid
     */
    LockOperation operation(Method method, Class<?> targetClass) {
        AnnotatedElementKey cacheKey = new AnnotatedElementKey(method, targetClass);
        Object cached = operations.get(cacheKey);
        if (cached == null) {
            LockOperation built = build(method, targetClass);
            cached = operations.computeIfAbsent(cacheKey, k -> built == null ? NO_LOCK : built);
        }
        return cached == NO_LOCK ? null : (LockOperation) cached;
    }

    /**
     * Checks every {@code @DistributedLock} method of {@code beanClass}; returns one message per
     * invalid annotation (empty when all are valid). Valid ones are cached for the calls to come.
     */
    public List<String> validate(Class<?> beanClass) {
        Class<?> userClass = ClassUtils.getUserClass(beanClass);
        List<String> problems = new ArrayList<>();
        for (Method method : lockedMethods(userClass)) {
            try {
                operation(method, userClass);
            } catch (LockAnnotationException e) {
                problems.add(e.getMessage());
            }
        }
        problems.addAll(strayTokenParameters(userClass));
        return problems;
    }

    /** The {@code @DistributedLock} methods of {@code userClass} and its superclasses, whatever their visibility. */
    static List<Method> lockedMethods(Class<?> userClass) {
        List<Method> locked = new ArrayList<>();
        ReflectionUtils.doWithMethods(userClass, locked::add, method -> !method.isBridge() && !method.isSynthetic()
                && AnnotatedElementUtils.hasAnnotation(method, DistributedLock.class));
        return locked;
    }

    private LockOperation build(Method method, Class<?> targetClass) {
        Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
        DistributedLock annotation = AnnotatedElementUtils.findMergedAnnotation(specific, DistributedLock.class);
        if (annotation == null) {
            annotation = AnnotatedElementUtils.findMergedAnnotation(method, DistributedLock.class);
        }
        if (annotation == null) {
            return null;
        }
        boolean suspending = SuspendingLocks.isSuspending(specific);
        if (suspending) {
            List<String> missing = SuspendingLocks.missingArtifacts();
            if (!missing.isEmpty()) {
                // Without them Spring would not run the function as a coroutine, or the lock would not follow it.
                throw new LockAnnotationException("Invalid @DistributedLock on " + describe(specific) + ": it is a Kotlin "
                        + "suspend function, which is locked until its coroutine completes only with " + missing
                        + " on the classpath; add " + (missing.size() == 1 ? "it" : "them") + " (Spring AOP 6.1 or later "
                        + "runs suspend functions through kotlinx-coroutines-reactor and kotlin-reflect)");
            }
        }
        AnnotatedElementKey element = new AnnotatedElementKey(specific, targetClass);
        Problems problems = new Problems(specific);

        boolean hasKey = !annotation.key().isBlank();
        boolean hasKeys = annotation.keys().length > 0;
        List<String> keySources = new ArrayList<>();
        if (hasKey && hasKeys) {
            problems.add("key", "'key' and 'keys' are both set; use one of them");
        } else if (!hasKey && !hasKeys) {
            problems.add("key", "neither 'key' nor 'keys' is set; give the lock key, for example key = \"#p0\"");
        } else if (hasKey) {
            keySources.add(annotation.key());
        } else {
            for (String source : annotation.keys()) {
                if (source.isBlank()) {
                    problems.add("keys", "an entry of 'keys' is blank");
                } else {
                    keySources.add(source);
                }
            }
        }
        List<Expression> keyExpressions = new ArrayList<>();
        for (String source : keySources) {
            keyExpressions.add(expression(element, specific, hasKey ? "key" : "keys", source, problems));
        }
        Expression condition = annotation.condition().isBlank() ? null
                : expression(element, specific, "condition", annotation.condition(), problems);
        Expression abortIf = annotation.abortIf().isBlank() ? null
                : expression(element, specific, "abortIf", annotation.abortIf(), problems);
        Duration waitTime = duration("waitTime", annotation.waitTime(), problems);
        Duration leaseTime = duration("leaseTime", annotation.leaseTime(), problems);
        try {
            LockRequest.validLeaseTime(leaseTime);
        } catch (IllegalArgumentException e) {
            problems.add("leaseTime", e.getMessage() + "; leave it empty for a watchdog-managed lease");
        }
        Duration lockAtLeastFor = duration("lockAtLeastFor", annotation.lockAtLeastFor(), problems);
        try {
            LockRequest.validLockAtLeastFor(lockAtLeastFor, leaseTime);
        } catch (IllegalArgumentException e) {
            problems.add("lockAtLeastFor", e.getMessage());
        }

        Method fallback = null;
        boolean fallbackTakesFailure = false;
        OnFailure onFailure = annotation.onFailure();
        String fallbackName = annotation.fallback();
        if (onFailure == OnFailure.FALLBACK && fallbackName.isBlank()) {
            problems.add("fallback", "onFailure = FALLBACK needs 'fallback', the name of a method on the same bean");
        } else if (onFailure != OnFailure.FALLBACK && !fallbackName.isBlank()) {
            problems.add("fallback", "'fallback' is set but onFailure is " + onFailure + "; set onFailure = FALLBACK");
        } else if (onFailure == OnFailure.FALLBACK) {
            fallback = findFallback(specific, targetClass, fallbackName, true);
            fallbackTakesFailure = fallback != null;
            if (fallback == null) {
                fallback = findFallback(specific, targetClass, fallbackName, false);
            }
            Class<?> returned = suspending ? SuspendingLocks.returnType(specific) : specific.getReturnType();
            Class<?> fallbackReturned = fallback == null ? null
                    : suspending ? SuspendingLocks.returnType(fallback) : fallback.getReturnType();
            if (fallback == null) {
                problems.add("fallback", "no " + (suspending ? "suspend function " : "method ") + fallbackName + "("
                        + parameterList(SuspendingLocks.userParameterTypes(specific)) + "[, LockNotAcquiredException])"
                        + " on " + targetClass.getName() + (suspending ? "; the fallback of a suspend function is a "
                        + "suspend function too" : ""));
            } else if (!ClassUtils.isAssignable(returned, fallbackReturned)) {
                problems.add("fallback", "fallback " + describe(fallback) + " returns " + fallbackReturned.getName()
                        + ", not assignable to " + returned.getName());
            } else {
                ReflectionUtils.makeAccessible(fallback);
            }
        }
        LockKind kind = kind(annotation, problems);
        int tokenParameter = tokenParameter(specific, hasKeys, problems);
        problems.throwIfAny();

        String name = annotation.name().isBlank() ? defaultName(specific) : annotation.name();
        checkOneFamilyPerName(name, kind, specific, problems);
        problems.throwIfAny();
        ResultKind resultKind = suspending
                ? (SuspendingLocks.returnsFlow(specific) ? ResultKind.FLUX : ResultKind.MONO)
                : resultKind(specific.getReturnType());
        return new LockOperation(specific, element, name, kind, List.copyOf(keyExpressions), List.copyOf(keySources), hasKeys,
                condition, abortIf, waitTime, leaseTime, lockAtLeastFor, onFailure, fallback, fallbackTakesFailure,
                resultKind, emptyResult(specific, resultKind), defaultName(specific) + "(..)",
                new LockOperation.TokenReads(annotation.fencingToken() || tokenParameter != LockOperation.NO_TOKEN_PARAMETER),
                tokenParameter, tokenParameter != LockOperation.NO_TOKEN_PARAMETER
                        && specific.getParameterTypes()[tokenParameter] == Map.class, annotation.whenLeaseLost(), suspending);
    }

    /**
     * The index of the method's {@code @FencingToken} parameter (declared on it or on the interface method it
     * implements), when there is one and it can take the token: a {@code long} or {@code Long} for one key, a
     * {@code Map<String, Long>} for any number of keys, and a store that issues tokens.
     */
    private int tokenParameter(Method method, boolean multiKey, Problems problems) {
        int found = LockOperation.NO_TOKEN_PARAMETER;
        for (int index : tokenParameters(method)) {
            MethodParameter parameter = new MethodParameter(method, index);
            String name = parameterName(method, index);
            if (found != LockOperation.NO_TOKEN_PARAMETER) {
                problems.addParameter(name, "a second @FencingToken parameter (the first is "
                        + parameterName(method, found) + "); the token goes to one parameter");
                continue;
            }
            found = index;
            Class<?> type = parameter.getParameterType();
            boolean oneToken = type == long.class || type == Long.class;
            boolean tokensByKey = type == Map.class && isStringToLong(parameter);
            if (multiKey && oneToken) {
                problems.addParameter(name, "the method locks several 'keys', each with a token of its own: declare it "
                        + "Map<String, Long> (every locked key's token by key)");
            } else if (!oneToken && !tokensByKey) {
                problems.addParameter(name, "is " + parameter.getGenericParameterType().getTypeName() + "; a fencing token "
                        + "parameter is a long or Long (or Map<String, Long> for every key's token)");
            }
            if (!store.capabilities().fencing()) {
                problems.addParameter(name, "the lock store " + store.getClass().getSimpleName() + " issues no fencing "
                        + "tokens (docs/stores.md); use a store that does, or fence the resource another way");
            }
        }
        return found;
    }

    private static boolean isStringToLong(MethodParameter parameter) {
        ResolvableType map = ResolvableType.forMethodParameter(parameter).asMap();
        return map.resolveGeneric(0) == String.class && map.resolveGeneric(1) == Long.class;
    }

    /** {@code 'token'} (index 2), or only the index when the compiler kept no parameter names. */
    private String parameterName(Method method, int index) {
        String[] names = evaluator.parameterNames().getParameterNames(method);
        return names == null ? "#" + index : "'" + names[index] + "' (#" + index + ")";
    }

    /**
     * Problems of {@code @FencingToken} parameters on methods of {@code userClass} without {@code @DistributedLock}:
     * nothing would pass them a token.
     */
    private static List<String> strayTokenParameters(Class<?> userClass) {
        List<String> problems = new ArrayList<>();
        ReflectionUtils.doWithMethods(userClass, method -> {
            Set<Integer> marked = tokenParameters(method);
            if (!marked.isEmpty()) {
                problems.add("@FencingToken parameter #" + marked.iterator().next() + " of " + describe(method)
                        + ": the method has no @DistributedLock, so nothing passes it a token; lock the method, or "
                        + "read the token from the LockHandle of the lock you hold");
            }
        }, method -> !method.isBridge() && !method.isSynthetic() && method.getDeclaringClass() != Object.class
                && method.getParameterCount() > 0 && AnnotatedElementUtils.findMergedAnnotation(method, DistributedLock.class) == null);
        return problems;
    }

    /**
     * The indexes of the parameters marked {@code @FencingToken} on {@code method} or on an interface method it
     * implements, in order. Read without making anything accessible: the beans checked include the JDK's own classes.
     */
    private static Set<Integer> tokenParameters(Method method) {
        Set<Integer> marked = new TreeSet<>();
        addMarkedParameters(method, marked);
        if (!Modifier.isPrivate(method.getModifiers()) && !Modifier.isStatic(method.getModifiers())) {
            for (Class<?> type : ClassUtils.getAllInterfacesForClassAsSet(method.getDeclaringClass())) {
                Method declared = ClassUtils.getMethodIfAvailable(type, method.getName(), method.getParameterTypes());
                if (declared != null) {
                    addMarkedParameters(declared, marked);
                }
            }
        }
        return marked;
    }

    private static void addMarkedParameters(Method method, Set<Integer> marked) {
        Annotation[][] annotations = method.getParameterAnnotations();
        for (int i = 0; i < annotations.length; i++) {
            for (Annotation annotation : annotations[i]) {
                if (annotation.annotationType() == FencingToken.class) {
                    marked.add(i);
                }
            }
        }
    }

    /** The kind the annotation asks for, when its {@code mode}, {@code permits} and {@code fair} fit together and the store takes it. */
    private LockKind kind(DistributedLock annotation, Problems problems) {
        LockMode mode = annotation.mode();
        int permits = annotation.permits();
        if (permits < 1) {
            problems.add("permits", "must be at least 1, was " + permits);
            return null;
        }
        if (permits > 1 && mode != LockMode.EXCLUSIVE) {
            problems.add("permits", "permits = " + permits + " cannot be combined with mode = " + mode
                    + "; a semaphore has no readers and writers");
            return null;
        }
        if (annotation.fair() && (mode != LockMode.EXCLUSIVE || permits > 1)) {
            problems.add("fair", "fair = true is for exclusive locks only, not with "
                    + (permits > 1 ? "permits = " + permits : "mode = " + mode));
            return null;
        }
        LockKind kind = permits > 1 ? LockKind.permits(permits)
                : annotation.fair() ? LockKind.FAIR
                : switch (mode) {
                    case EXCLUSIVE -> LockKind.EXCLUSIVE;
                    case READ -> LockKind.READ;
                    case WRITE -> LockKind.WRITE;
                };
        if (!store.capabilities().supports(kind)) {
            String attribute = permits > 1 ? "permits" : annotation.fair() ? "fair" : "mode";
            problems.add(attribute, "the lock store " + store.getClass().getSimpleName() + " cannot take " + kind.mode()
                    + " locks (it takes " + store.capabilities().modes() + "); use a store that does, or another kind of lock");
        }
        return kind;
    }

    /**
     * Refuses a lock name used with kinds that do not lock together: a plain lock and a read/write lock of one
     * name are separate locks in the store, and permits must agree on their number.
     */
    private void checkOneFamilyPerName(String name, LockKind kind, Method method, Problems problems) {
        Declaration mine = new Declaration(kind, describe(method));
        Declaration first = kindsByName.putIfAbsent(name, mine);
        if (first == null || first.method().equals(mine.method())) {
            return;
        }
        boolean compatible = switch (kind.mode()) {
            case EXCLUSIVE, FAIR -> first.kind().mode() == LockKind.Mode.EXCLUSIVE || first.kind().mode() == LockKind.Mode.FAIR;
            case READ, WRITE -> first.kind().mode() == LockKind.Mode.READ || first.kind().mode() == LockKind.Mode.WRITE;
            case PERMITS -> first.kind().equals(kind);
        };
        if (!compatible) {
            problems.add("name", "lock '" + name + "' is taken as " + kind + " here and as " + first.kind() + " by "
                    + first.method() + "; those do not exclude each other (a READ lock pairs with WRITE, permits must "
                    + "agree on their number): give the methods the same kind or different names");
        }
    }

    private Expression expression(AnnotatedElementKey element, Method method, String attribute, String source, Problems problems) {
        Expression parsed;
        try {
            parsed = evaluator.parse(element, source);
        } catch (ParseException e) {
            problems.add(attribute, "expression '" + source + "' does not parse: " + e.getMessage());
            return null;
        }
        if (parsed instanceof SpelExpression spel) {
            checkReferences(spel.getAST(), method, attribute, source, problems);
            String[] names = evaluator.parameterNames().getParameterNames(method);
            for (String problem : ExpressionPropertyCheck.problems(spel.getAST(), method, names, source)) {
                problems.add(attribute, problem);
            }
        }
        return parsed;
    }

    /** Checks that {@code #name} variables are parameters (or p0/a0 in range) and {@code @bean} references exist. */
    private void checkReferences(SpelNode node, Method method, String attribute, String source, Problems problems) {
        if (node instanceof VariableReference) {
            String variable = node.toStringAST().substring(1);
            checkVariable(variable, method, attribute, source, problems);
        } else if (node instanceof BeanReference && beanFactory != null) {
            String bean = node.toStringAST().substring(1);
            if (!bean.startsWith("&") && !beanFactory.containsBean(bean)) {
                problems.add(attribute, "expression '" + source + "' refers to bean '" + bean + "', which does not exist");
            }
        }
        for (int i = 0; i < node.getChildCount(); i++) {
            checkReferences(node.getChild(i), method, attribute, source, problems);
        }
    }

    private void checkVariable(String variable, Method method, String attribute, String source, Problems problems) {
        if (variable.equals("root") || variable.equals("this")) {
            return;
        }
        var indexed = INDEXED_ARGUMENT.matcher(variable);
        if (indexed.matches()) {
            int index = Integer.parseInt(indexed.group(1));
            int count = SuspendingLocks.userParameterTypes(method).length;
            if (index >= count) {
                problems.add(attribute, "expression '" + source + "' refers to '#" + variable + "' but the method has "
                        + count + " parameter(s)");
            }
            return;
        }
        String[] names = evaluator.parameterNames().getParameterNames(method);
        if (names == null) {
            if (method.getParameterCount() > 0) {
                problems.add(attribute, "expression '" + source + "' refers to '#" + variable + "' but the parameter names of "
                        + describe(method) + " are not available: compile with '-parameters' (maven-compiler-plugin "
                        + "<parameters>true</parameters>) or use #p0/#a0");
            } else {
                problems.add(attribute, "expression '" + source + "' refers to '#" + variable + "' but the method has no parameters");
            }
        } else if (!Arrays.asList(names).contains(variable)) {
            problems.add(attribute, "expression '" + source + "' refers to '#" + variable + "', which is not a parameter; "
                    + "the parameters are " + Arrays.toString(names));
        }
    }

    private Duration duration(String attribute, String text, Problems problems) {
        if (text.isBlank()) {
            return null;
        }
        String resolved;
        try {
            resolved = placeholders == null ? text : placeholders.apply(text);
        } catch (RuntimeException e) {
            problems.add(attribute, "cannot resolve '" + text + "': " + e.getMessage());
            return null;
        }
        if (resolved == null || resolved.isBlank()) {
            problems.add(attribute, "'" + text + "' resolves to nothing");
            return null;
        }
        if (resolved.contains("${")) {
            problems.add(attribute, "'" + text + "' has a placeholder and no Spring Environment resolves it");
            return null;
        }
        try {
            return LockDurations.parse(resolved);
        } catch (IllegalArgumentException e) {
            problems.add(attribute, e.getMessage());
            return null;
        }
    }

    /**
     * The fallback {@code name(parameters[, LockNotAcquiredException])} of {@code method} on {@code targetClass}; for a
     * suspend function, a suspend function with those parameters, the continuation last; null when none.
     */
    static @Nullable Method findFallback(Method method, Class<?> targetClass, String name, boolean withFailure) {
        boolean suspending = SuspendingLocks.isSuspending(method);
        Class<?>[] parameters = SuspendingLocks.userParameterTypes(method);
        for (Class<?> type = targetClass; type != null && type != Object.class; type = type.getSuperclass()) {
            for (Method candidate : type.getDeclaredMethods()) {
                if (!candidate.getName().equals(name) || candidate.isBridge()
                        || SuspendingLocks.isSuspending(candidate) != suspending) {
                    continue;
                }
                Class<?>[] candidateParameters = SuspendingLocks.userParameterTypes(candidate);
                int expected = parameters.length + (withFailure ? 1 : 0);
                if (candidateParameters.length != expected
                        || !Arrays.equals(parameters, Arrays.copyOf(candidateParameters, parameters.length))) {
                    continue;
                }
                if (withFailure) {
                    Class<?> last = candidateParameters[expected - 1];
                    if (!last.isAssignableFrom(LockNotAcquiredException.class)) {
                        continue;
                    }
                }
                return candidate;
            }
        }
        return null;
    }

    private static ResultKind resultKind(Class<?> returnType) {
        if (CompletionStage.class.isAssignableFrom(returnType)) {
            return ResultKind.COMPLETION_STAGE;
        }
        if (REACTOR_PRESENT) {
            ResultKind reactive = ReactorLocks.resultKind(returnType);
            if (reactive != null) {
                return reactive;
            }
        }
        return ResultKind.PLAIN;
    }

    private static LockOperation.EmptyResult emptyResult(Method method, ResultKind kind) {
        return switch (kind) {
            case PLAIN -> emptyValue(method.getReturnType(), ResolvableType.forMethodReturnType(method));
            case COMPLETION_STAGE -> {
                ResolvableType valueType = ResolvableType.forMethodReturnType(method).as(CompletionStage.class).getGeneric(0);
                LockOperation.EmptyResult value = emptyValue(valueType.toClass(), valueType);
                yield () -> CompletableFuture.completedFuture(value.get());
            }
            case MONO, FLUX -> ReactorLocks.empty(kind);
        };
    }

    private static LockOperation.EmptyResult emptyValue(Class<?> type, ResolvableType resolvable) {
        if (type == void.class || type == Void.class || type == Object.class) {
            return () -> null;
        }
        if (type.isPrimitive()) {
            Object primitiveDefault = java.lang.reflect.Array.get(java.lang.reflect.Array.newInstance(type, 1), 0);
            return () -> primitiveDefault;
        }
        if (type == Optional.class) {
            return Optional::empty;
        }
        if (Collection.class.isAssignableFrom(type) || type == Iterable.class) {
            Class<?> collectionType = type == Iterable.class ? List.class : type;
            Class<?> elementType = resolvable.asCollection().resolveGeneric(0);
            return () -> CollectionFactory.createCollection(collectionType, elementType, 0);
        }
        if (Map.class.isAssignableFrom(type)) {
            Class<?> keyType = resolvable.asMap().resolveGeneric(0);
            return () -> CollectionFactory.createMap(type, keyType, 0);
        }
        return () -> null;
    }

    private static String defaultName(Method method) {
        Class<?> type = method.getDeclaringClass();
        String simple = type.getSimpleName();
        if (simple.isEmpty()) {
            simple = ClassUtils.getShortName(type);
        }
        return simple + "." + method.getName();
    }

    /** {@code com.example.OrderService.ship(Order)}. */
    static String describe(Method method) {
        return method.getDeclaringClass().getName() + "." + method.getName() + "(" + parameterList(method.getParameterTypes()) + ")";
    }

    private static String parameterList(Class<?>[] types) {
        return Arrays.stream(types).map(Class::getSimpleName).collect(Collectors.joining(", "));
    }

    /** The problems of one annotation, thrown together. */
    private static final class Problems {
        private final Method method;
        private final List<String> messages = new ArrayList<>();

        Problems(Method method) {
            this.method = method;
        }

        void add(String attribute, String message) {
            messages.add("attribute '" + attribute + "': " + message);
        }

        void addParameter(String parameter, String message) {
            messages.add("@FencingToken parameter " + parameter + ": " + message);
        }

        void throwIfAny() {
            if (!messages.isEmpty()) {
                throw new LockAnnotationException("Invalid @DistributedLock on " + describe(method) + ": "
                        + String.join("; ", messages));
            }
        }
    }
}
