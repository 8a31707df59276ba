package dev.dlock.aspect;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.MethodParameter;
import org.springframework.core.ResolvableType;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.Assign;
import org.springframework.expression.spel.ast.CompoundExpression;
import org.springframework.expression.spel.ast.Elvis;
import org.springframework.expression.spel.ast.Indexer;
import org.springframework.expression.spel.ast.InlineList;
import org.springframework.expression.spel.ast.InlineMap;
import org.springframework.expression.spel.ast.IntLiteral;
import org.springframework.expression.spel.ast.MethodReference;
import org.springframework.expression.spel.ast.Operator;
import org.springframework.expression.spel.ast.OperatorNot;
import org.springframework.expression.spel.ast.Projection;
import org.springframework.expression.spel.ast.PropertyOrFieldReference;
import org.springframework.expression.spel.ast.Selection;
import org.springframework.expression.spel.ast.SpelNodeImpl;
import org.springframework.expression.spel.ast.Ternary;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.support.ReflectivePropertyAccessor;
import org.springframework.util.ClassUtils;

import java.beans.Introspector;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.TypeVariable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Checks, before any call, that the properties and methods a {@code @DistributedLock} expression reads exist on the
 * declared types where nothing at run time can add them: a final class, a record, a final JDK type.
 *
 * <p>It follows each chain that starts at a parameter ({@code #order}, {@code #p0}, {@code #a0}, {@code #root.args[0]})
 * or at the root object, step by step, and stops at the first type it cannot be sure of (an interface, a class a
 * subclass could extend, {@code Object}, a {@code Map}, an unresolved type variable) or node it does not know: a valid
 * expression never fails the start. Properties are looked up by SpEL's own {@link ReflectivePropertyAccessor}, so
 * what it reads at run time (getters, {@code isX}, public fields, record accessors, plain {@code x()} methods) passes.
 */
final class ExpressionPropertyCheck {

    private static final Logger log = LoggerFactory.getLogger(ExpressionPropertyCheck.class);
    private static final Pattern INDEXED_ARGUMENT = Pattern.compile("[pa](\\d+)");
    private static final ResolvableType ROOT = ResolvableType.forClass(LockExpressionRoot.class);
    private static final int LISTED_NAMES = 20;

    private final Method method;
    private final String[] parameterNames;
    private final String source;
    // A fresh accessor per expression: its method cache holds classes, which a shared one would keep past a redeploy.
    private final Members members = new Members();
    private final Set<String> problems = new LinkedHashSet<>();

    /** What a node is evaluated against: the active context object and the scope root, each null where unknown. */
    private record Scope(ResolvableType active, String activeName, ResolvableType scopeRoot, String scopeRootName) {
        static final Scope UNKNOWN = new Scope(null, null, null, null);

        static Scope of(ResolvableType type, String name) {
            return new Scope(type, name, type, name);
        }
    }

    /** Where a chain has got to: its text so far, the declared type there (null once unknown), whether it is {@code #root.args}. */
    private record Reached(String text, ResolvableType type, boolean arguments) {
    }

    private ExpressionPropertyCheck(Method method, String[] parameterNames, String source) {
        this.method = method;
        this.parameterNames = parameterNames;
        this.source = source;
    }

    /**
     * The problems of the expression {@code source} (parsed to {@code ast}) on {@code method}, one message each, empty
     * when everything it can check exists. {@code parameterNames} may be null (compiled without {@code -parameters}).
     */
    static List<String> problems(SpelNode ast, Method method, String[] parameterNames, String source) {
        ExpressionPropertyCheck check = new ExpressionPropertyCheck(method, parameterNames, source);
        try {
            check.walk(ast, Scope.of(ROOT, "#root"));
        } catch (RuntimeException | LinkageError e) {
            // Only a help: a class it cannot introspect (a missing optional dependency) leaves the rest to the call.
            log.debug("dlock: the property check of '{}' on {} stopped: {}", source, LockOperationSource.describe(method), e.toString());
        }
        return List.copyOf(check.problems);
    }

    private void walk(SpelNode node, Scope scope) {
        if (node == null || node instanceof VariableReference) {
            return;
        }
        if (node instanceof CompoundExpression) {
            List<SpelNode> parts = new ArrayList<>();
            for (int i = 0; i < node.getChildCount(); i++) {
                parts.add(node.getChild(i));
            }
            chain(parts, scope);
        } else if (isStep(node)) {
            chain(List.of(node), scope);
        } else if (node instanceof Assign) {
            // The target is written, not read: a property with a setter only is fine there.
            walk(child(node, 1), scope);
        } else if (node instanceof InlineMap) {
            for (int i = 0; i < node.getChildCount(); i++) {
                // A key written as a name ({a: 1}) is that name, not a property read.
                if (i % 2 == 1 || !(node.getChild(i) instanceof PropertyOrFieldReference)) {
                    walk(node.getChild(i), scope);
                }
            }
        } else if (node instanceof Operator || node instanceof OperatorNot || node instanceof Ternary || node instanceof Elvis
                || node instanceof InlineList) {
            for (int i = 0; i < node.getChildCount(); i++) {
                walk(node.getChild(i), scope);
            }
        } else {
            // Function and constructor arguments, type references and the like: no context known for them.
            for (int i = 0; i < node.getChildCount(); i++) {
                walk(node.getChild(i), Scope.UNKNOWN);
            }
        }
    }

    private static boolean isStep(SpelNode node) {
        return node instanceof PropertyOrFieldReference || node instanceof MethodReference || node instanceof Indexer
                || node instanceof Selection || node instanceof Projection;
    }

    private void chain(List<SpelNode> parts, Scope scope) {
        SpelNode head = parts.get(0);
        Reached reached;
        int next = 1;
        if (head instanceof VariableReference) {
            reached = variable(head.toStringAST().substring(1), scope);
        } else if (isStep(head)) {
            reached = new Reached(scope.activeName(), scope.active(), false);
            next = 0;
        } else {
            walk(head, scope);
            reached = new Reached(head.toStringAST(), null, false);
        }
        for (int i = next; i < parts.size(); i++) {
            reached = step(parts.get(i), reached, scope);
        }
    }

    private Reached variable(String name, Scope scope) {
        if (name.equals("root")) {
            return new Reached("#root", ROOT, false);
        }
        if (name.equals("this")) {
            return new Reached("#this", scope.active(), false);
        }
        int index = parameterIndex(name);
        return new Reached("#" + name, index < 0 ? null : parameterType(index), false);
    }

    /** The parameter {@code #name} stands for, or -1 when it is none or unclear (a parameter named like {@code p1}). */
    private int parameterIndex(String name) {
        boolean indexed = INDEXED_ARGUMENT.matcher(name).matches();
        if (parameterNames != null && Arrays.asList(parameterNames).contains(name)) {
            // MethodBasedEvaluationContext sets p<i> after the names of earlier parameters: such a name may be overwritten.
            return indexed ? -1 : Arrays.asList(parameterNames).indexOf(name);
        }
        if (indexed) {
            int index = Integer.parseInt(name.substring(1));
            return index < method.getParameterCount() ? index : -1;
        }
        return -1;
    }

    private ResolvableType parameterType(int index) {
        MethodParameter parameter = new MethodParameter(method, index);
        return parameter.getGenericParameterType() instanceof TypeVariable<?> ? null : ResolvableType.forMethodParameter(parameter);
    }

    private Reached step(SpelNode node, Reached reached, Scope scope) {
        boolean nullSafe = node instanceof SpelNodeImpl impl && impl.isNullSafe();
        String text = reached.text() + (nullSafe ? "?." : node instanceof Indexer ? "" : ".") + node.toStringAST();
        if (node instanceof PropertyOrFieldReference property) {
            return new Reached(text, property(property, reached), ROOT.equals(reached.type()) && property.getName().equals("args"));
        }
        if (node instanceof MethodReference call) {
            // Arguments are evaluated against the scope root, not the object the method is called on.
            Scope arguments = Scope.of(scope.scopeRoot(), scope.scopeRootName());
            for (int i = 0; i < call.getChildCount(); i++) {
                walk(call.getChild(i), arguments);
            }
            return new Reached(text, method(call, reached), false);
        }
        if (node instanceof Indexer) {
            SpelNode index = child(node, 0);
            walk(index, new Scope(ROOT, "#root", scope.scopeRoot(), scope.scopeRootName()));
            if (reached.arguments() && index instanceof IntLiteral literal && literal.getLiteralValue().getValue() instanceof Integer i) {
                return new Reached(text, i >= 0 && i < method.getParameterCount() ? parameterType(i) : null, false);
            }
            return new Reached(text, element(reached.type()), false);
        }
        if (node instanceof Selection || node instanceof Projection) {
            walk(child(node, 0), Scope.of(element(reached.type()), "#this"));
            return new Reached(text, null, false);
        }
        for (int i = 0; i < node.getChildCount(); i++) {
            walk(node.getChild(i), Scope.UNKNOWN);
        }
        return new Reached(text, null, false);
    }

    /** The declared type of the property read, null when unknown; records a problem when it surely does not exist. */
    private ResolvableType property(PropertyOrFieldReference property, Reached reached) {
        Class<?> type = closed(reached.type(), property.isNullSafe());
        if (type == null) {
            return null;
        }
        String name = property.getName();
        ResolvableType owner = owner(reached.type(), type);
        Method getter = members.getter(name, type);
        if (getter != null) {
            return getter.getReturnType() == void.class ? null : ResolvableType.forMethodParameter(new MethodParameter(getter, -1), owner);
        }
        Field field = members.field(name, type);
        if (field != null) {
            return ResolvableType.forField(field, owner);
        }
        problems.add("expression '" + source + "' refers to '" + name + "' of '" + reached.text() + "', but " + type.getName()
                + " has no such property: no public getter, field or no-argument method of that name; "
                + ClassUtils.getShortName(type) + " has" + listed(propertyNames(type), name));
        return null;
    }

    /** The declared result of the method called, null when unknown; records a problem when it surely does not exist. */
    private ResolvableType method(MethodReference call, Reached reached) {
        Class<?> type = closed(reached.type(), call.isNullSafe());
        if (type == null) {
            return null;
        }
        String name = call.getName();
        int arguments = call.getChildCount();
        List<Method> named = Arrays.stream(type.getMethods()).filter(m -> m.getName().equals(name)).toList();
        List<Method> callable = named.stream().filter(m -> m.getParameterCount() == arguments
                || (m.isVarArgs() && arguments >= m.getParameterCount() - 1)).toList();
        if (named.isEmpty()) {
            problems.add("expression '" + source + "' calls '" + name + "(..)' on '" + reached.text() + "', but " + type.getName()
                    + " has no public method of that name; " + ClassUtils.getShortName(type) + "'s methods" + listed(methodNames(type), name));
        } else if (callable.isEmpty()) {
            problems.add("expression '" + source + "' calls '" + name + "' on '" + reached.text() + "' with " + arguments
                    + " argument(s), but " + type.getName() + "." + name + " takes "
                    + named.stream().map(m -> String.valueOf(m.getParameterCount())).distinct().sorted().collect(Collectors.joining(" or ")));
        }
        if (callable.size() != 1 || callable.get(0).getReturnType() == void.class) {
            return null;
        }
        return ResolvableType.forMethodParameter(new MethodParameter(callable.get(0), -1), owner(reached.type(), type));
    }

    /**
     * The class whose members are all there is at run time (a final class, a record, a final enum, a boxed primitive),
     * or null: the value may be a subclass with more, or SpEL reads it otherwise (an array's length, a Class's static
     * members, a Map, an Optional unwrapped by {@code ?.}).
     */
    private static Class<?> closed(ResolvableType declared, boolean nullSafe) {
        Class<?> type = declared == null ? null : declared.resolve();
        if (type == null || type == void.class) {
            return null;
        }
        type = ClassUtils.resolvePrimitiveIfNecessary(type);
        if (!Modifier.isFinal(type.getModifiers()) || type.isArray() || type == Class.class || Map.class.isAssignableFrom(type)
                || (nullSafe && type == Optional.class)) {
            return null;
        }
        return type;
    }

    /** The type generics resolve against: the declared one, unless that was a primitive (read on its box). */
    private static ResolvableType owner(ResolvableType declared, Class<?> type) {
        return declared.resolve() == type ? declared : ResolvableType.forClass(type);
    }

    /** The element type of an array or collection, for indexing, selection and projection; null otherwise. */
    private static ResolvableType element(ResolvableType container) {
        if (container == null) {
            return null;
        }
        if (container.isArray()) {
            return container.getComponentType();
        }
        Class<?> type = container.resolve();
        return type != null && Collection.class.isAssignableFrom(type) ? container.asCollection().getGeneric(0) : null;
    }

    private static SpelNode child(SpelNode node, int index) {
        return index < node.getChildCount() ? node.getChild(index) : null;
    }

    /** The properties worth naming: those a getter, a public field or a no-argument method of the type's own gives. */
    private static Set<String> propertyNames(Class<?> type) {
        Set<String> names = new TreeSet<>();
        for (Method candidate : ownMethods(type)) {
            if (candidate.getParameterCount() > 0 || candidate.getReturnType() == void.class) {
                continue;
            }
            String name = candidate.getName();
            boolean bool = candidate.getReturnType() == boolean.class || candidate.getReturnType() == Boolean.class;
            if (name.length() > 3 && name.startsWith("get")) {
                names.add(Introspector.decapitalize(name.substring(3)));
            } else if (name.length() > 2 && name.startsWith("is") && bool) {
                names.add(Introspector.decapitalize(name.substring(2)));
            } else {
                names.add(name);
            }
        }
        for (Field field : type.getFields()) {
            if (!Modifier.isStatic(field.getModifiers())) {
                names.add(field.getName());
            }
        }
        return names;
    }

    private static Set<String> methodNames(Class<?> type) {
        Set<String> names = new TreeSet<>();
        ownMethods(type).forEach(m -> names.add(m.getName()));
        return names;
    }

    /** Public instance methods other than Object's (and its equals, hashCode and toString overridden). */
    private static List<Method> ownMethods(Class<?> type) {
        return Arrays.stream(type.getMethods()).filter(m -> !Modifier.isStatic(m.getModifiers()) && !m.isBridge()
                && m.getDeclaringClass() != Object.class && !isObjectMethod(m)).toList();
    }

    private static boolean isObjectMethod(Method method) {
        return switch (method.getName()) {
            case "hashCode", "toString" -> method.getParameterCount() == 0;
            case "equals" -> method.getParameterCount() == 1 && method.getParameterTypes()[0] == Object.class;
            default -> false;
        };
    }

    /** ": a, b, c", or for a long list the names nearest to {@code wanted} first, cut short. */
    private static String listed(Set<String> names, String wanted) {
        if (names.isEmpty()) {
            return ": nothing";
        }
        if (names.size() <= LISTED_NAMES) {
            return ": " + String.join(", ", names);
        }
        List<String> nearest = names.stream()
                .sorted(Comparator.comparingInt((String name) -> distance(name.toLowerCase(Locale.ROOT), wanted.toLowerCase(Locale.ROOT)))
                        .thenComparing(Comparator.naturalOrder()))
                .limit(LISTED_NAMES).toList();
        return ", the nearest first: " + String.join(", ", nearest) + ", ...";
    }

    /** Levenshtein's edit distance, to put a misspelt name's likely meaning first. */
    private static int distance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    /** SpEL's own lookup of a readable property, so the check accepts exactly what an evaluation reads. */
    private static final class Members extends ReflectivePropertyAccessor {
        Method getter(String name, Class<?> type) {
            return findGetterForProperty(name, type, false);
        }

        Field field(String name, Class<?> type) {
            return findField(name, type, false);
        }
    }
}
