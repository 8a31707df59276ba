package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.context.expression.AnnotatedElementKey;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.spel.SpelEvaluationException;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The startup check of the properties an expression reads on declared types no subclass can extend: a misspelt one on
 * a record or final class is reported naming method, attribute, expression, type and property; every expression SpEL
 * can read passes, and so does every one it cannot decide before the call.
 */
class LockOperationSourcePropertyCheckTest {

    /** An order. */
    public record Order(String id, Customer customer) {
    }

    /** A customer. */
    public record Customer(String name) {
    }

    /** A Java bean that no subclass can extend. */
    public static final class Account {
        /** Public fields are read as properties too. */
        public final String region = "eu";

        /** The account's id. */
        public String getId() {
            return "acc-1";
        }

        /** Whether it is active. */
        public boolean isActive() {
            return true;
        }
    }

    /** A class a subclass may extend with more properties. */
    public static class Draft {
        /** The draft's id. */
        public String getId() {
            return "d-1";
        }
    }

    /** A subclass with a property its parent lacks: {@code #draft.extra} reads it at run time. */
    public static class ExtendedDraft extends Draft {
        /** Only on the subclass. */
        public String getExtra() {
            return "x";
        }
    }

    /** An interface, whose implementations may have anything. */
    public interface Item {
        /** The item's sku. */
        String sku();
    }

    /** Expressions the check can follow to the end, each also read by SpEL on the sample arguments. */
    @SuppressWarnings("unused")
    public static class ValidKeys {
        @DistributedLock(key = "#order.id")
        public void property(Order order) {
        }

        @DistributedLock(key = "#order.id()")
        public void accessorCall(Order order) {
        }

        @DistributedLock(key = "#order.customer.name")
        public void nested(Order order) {
        }

        @DistributedLock(key = "#order?.id")
        public void safeNavigation(Order order) {
        }

        @DistributedLock(key = "#order.customer?.name")
        public void safeNavigationInside(Order order) {
        }

        @DistributedLock(key = "#p0.id")
        public void byIndex(Order order) {
        }

        @DistributedLock(key = "#a0.customer.name")
        public void byOtherIndex(Order order) {
        }

        @DistributedLock(key = "#root.args[0].id")
        public void rootArgs(Order order) {
        }

        @DistributedLock(key = "#m['a']")
        public void mapIndex(Map<String, String> m) {
        }

        @DistributedLock(key = "#l[0].id")
        public void listIndex(List<Order> l) {
        }

        @DistributedLock(key = "#orders[0].customer.name")
        public void arrayIndex(Order[] orders) {
        }

        @DistributedLock(keys = "#l.![id]")
        public void projection(List<Order> l) {
        }

        @DistributedLock(keys = "#l.?[customer.name == 'ann'].![#this.id]")
        public void selection(List<Order> l) {
        }

        @DistributedLock(key = "#order.id.length()")
        public void methodOnAJdkType(Order order) {
        }

        @DistributedLock(key = "#order.id.bytes.length")
        public void jdkGetterThenArrayLength(Order order) {
        }

        @DistributedLock(key = "#order.id + ':' + #order.customer.name")
        public void concatenation(Order order) {
        }

        @DistributedLock(key = "#x.id")
        public void beanGetter(Account x) {
        }

        @DistributedLock(key = "#x.id", condition = "#x.active")
        public void booleanIsGetter(Account x) {
        }

        @DistributedLock(key = "#x.region")
        public void publicField(Account x) {
        }

        @DistributedLock(key = "#order.id", condition = "#order.customer.name.startsWith('a')",
                abortIf = "#order.id.isEmpty() or #order.customer == null")
        public void conditionAndAbortIf(Order order) {
        }

        @DistributedLock(key = "#order.toString() + #order.hashCode + #order.class.simpleName")
        public void objectMembers(Order order) {
        }

        @DistributedLock(key = "#n.toString() + #n.class.name")
        public void primitive(int n) {
        }

        @DistributedLock(key = "#root.methodName + #root.method.name + #root.targetClass.simpleName")
        public void rootProperties(Order order) {
        }

        @DistributedLock(key = "methodName + ':' + args[0].id")
        public void rootWithoutHash(Order order) {
        }

        @DistributedLock(key = "#order.customer.name.substring(0, 1).toUpperCase()")
        public void methodChain(Order order) {
        }

        @DistributedLock(key = "T(java.lang.String).format('%s-%s', #order.id, #order.customer.name)")
        public void varargsOnAType(Order order) {
        }

        @DistributedLock(key = "{region: #order.customer.name, id: #order.id}.toString()")
        public void inlineMapWithNamedKeys(Order order) {
        }

        @DistributedLock(key = "#order.customer != null ? #order.customer.name : (#order.id ?: 'none')")
        public void ternaryAndElvis(Order order) {
        }
    }

    /** Expressions whose properties depend on the value at run time: the check cannot know, so they pass. */
    @SuppressWarnings("unused")
    public static class UndecidableKeys {
        @DistributedLock(key = "#draft.extra")
        public void nonFinalClass(Draft draft) {
        }

        @DistributedLock(key = "#item.nope")
        public void anInterface(Item item) {
        }

        @DistributedLock(key = "#m.a")
        public void mapProperty(Map<String, String> m) {
        }

        @DistributedLock(key = "#o.nope")
        public void object(Object o) {
        }

        @DistributedLock(key = "#opt?.id")
        public void optionalUnwrappedBySafeNavigation(Optional<Order> opt) {
        }

        @DistributedLock(key = "#root.target.anything + #root.args[1]")
        public void targetAndArgsOutOfRange(Order order) {
        }

        @DistributedLock(key = "@someBean.keyFor(#order).nope")
        public void beanResult(Order order) {
        }

        @DistributedLock(key = "(#order.customer).nope")
        public void parenthesized(Order order) {
        }
    }

    /** One misspelt read per method; SpEL fails each of them at run time. */
    @SuppressWarnings("unused")
    public static class BadKeys {
        @DistributedLock(key = "#order.idd")
        public void property(Order order) {
        }

        @DistributedLock(key = "#order.customer.nmae")
        public void nested(Order order) {
        }

        @DistributedLock(keys = {"#order.id", "#order.bad"})
        public void secondOfKeys(Order order) {
        }

        @DistributedLock(key = "#order.id", condition = "#order.amount > 1000")
        public void condition(Order order) {
        }

        @DistributedLock(key = "#order.id", abortIf = "#order.customer.vip")
        public void abortIf(Order order) {
        }

        @DistributedLock(key = "#order?.idd")
        public void safeNavigation(Order order) {
        }

        @DistributedLock(key = "#p0.idd")
        public void byIndex(Order order) {
        }

        @DistributedLock(key = "#root.args[0].idd")
        public void rootArgs(Order order) {
        }

        @DistributedLock(key = "#order.idd()")
        public void missingMethod(Order order) {
        }

        @DistributedLock(key = "#order.id(1)")
        public void wrongArgumentCount(Order order) {
        }

        @DistributedLock(key = "#order.id.lenght()")
        public void methodOnAJdkType(Order order) {
        }

        @DistributedLock(keys = "#l.![idd]")
        public void projection(List<Order> l) {
        }

        @DistributedLock(key = "#l[0].customer.nmae")
        public void listElement(List<Order> l) {
        }

        @DistributedLock(key = "#x.activ")
        public void beanProperty(Account x) {
        }

        @DistributedLock(key = "#root.methodNam")
        public void root(Order order) {
        }
    }

    private final LockExpressionEvaluator evaluator = new LockExpressionEvaluator(null);
    private final LockOperationSource source = new LockOperationSource(evaluator, null, null, new InMemoryLockBackend());

    @Test
    void aMisspeltPropertyOfARecordNamesMethodAttributeExpressionTypeAndProperty() {
        assertThat(problemOf("property")).isEqualTo("Invalid @DistributedLock on " + BadKeys.class.getName() + ".property(Order): "
                + "attribute 'key': expression '#order.idd' refers to 'idd' of '#order', but " + Order.class.getName()
                + " has no such property: no public getter, field or no-argument method of that name; "
                + "LockOperationSourcePropertyCheckTest.Order has: customer, id");
    }

    static Stream<Arguments> badKeys() {
        return Stream.of(
                Arguments.of("nested", "key", "'#order.customer.nmae' refers to 'nmae' of '#order.customer', but "
                        + Customer.class.getName() + " has no such property", "Customer has: name"),
                Arguments.of("secondOfKeys", "keys", "expression '#order.bad' refers to 'bad' of '#order'", "has: customer, id"),
                Arguments.of("condition", "condition", "expression '#order.amount > 1000' refers to 'amount' of '#order'", Order.class.getName()),
                Arguments.of("abortIf", "abortIf", "expression '#order.customer.vip' refers to 'vip' of '#order.customer'", Customer.class.getName()),
                Arguments.of("safeNavigation", "key", "refers to 'idd' of '#order'", Order.class.getName()),
                Arguments.of("byIndex", "key", "refers to 'idd' of '#p0'", Order.class.getName()),
                Arguments.of("rootArgs", "key", "refers to 'idd' of '#root.args[0]'", Order.class.getName()),
                Arguments.of("missingMethod", "key", "calls 'idd(..)' on '#order', but " + Order.class.getName()
                        + " has no public method of that name", "Order's methods: customer, id"),
                Arguments.of("wrongArgumentCount", "key", "calls 'id' on '#order' with 1 argument(s), but "
                        + Order.class.getName() + ".id takes 0", "'#order.id(1)'"),
                Arguments.of("methodOnAJdkType", "key", "calls 'lenght(..)' on '#order.id', but java.lang.String has no public method",
                        "String's methods, the nearest first: length, "),
                Arguments.of("projection", "keys", "refers to 'idd' of '#this', but " + Order.class.getName(), "has: customer, id"),
                Arguments.of("listElement", "key", "refers to 'nmae' of '#l[0].customer'", Customer.class.getName()),
                Arguments.of("beanProperty", "key", "refers to 'activ' of '#x', but " + Account.class.getName(), "has: active, id, region"),
                Arguments.of("root", "key", "refers to 'methodNam' of '#root', but " + LockExpressionRoot.class.getName(),
                        "has: args, method, methodName, target, targetClass"));
    }

    /** Each misspelt read on a type no subclass can extend is reported, in the attribute it is in. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("badKeys")
    void aMisspeltReadOnAClosedTypeIsReported(String method, String attribute, String why, String alsoSaid) {
        assertThat(problemOf(method))
                .startsWith("Invalid @DistributedLock on " + BadKeys.class.getName() + "." + method + "(")
                .contains("attribute '" + attribute + "': ")
                .contains(why)
                .contains(alsoSaid);
    }

    /** Of several keys only the bad one is named. */
    @Test
    void onlyTheBadKeyOfSeveralIsReported() {
        assertThat(problemOf("secondOfKeys")).contains("'#order.bad'").doesNotContain("'#order.id'");
    }

    /** No false alarm: what the check reports, SpEL refuses at run time (EL1008E or EL1004E). */
    @Test
    void everyReportedExpressionFailsWhenEvaluated() throws Exception {
        for (Method method : declared(BadKeys.class)) {
            List<String> expressions = expressions(method);
            boolean failed = false;
            for (String expression : expressions) {
                try {
                    evaluate(method, expression);
                } catch (SpelEvaluationException e) {
                    failed = true;
                }
            }
            assertThat(failed).as(method.getName() + " " + expressions).isTrue();
        }
    }

    @Test
    void validExpressionsPassTheCheck() {
        assertThat(source.validate(ValidKeys.class)).isEmpty();
    }

    /** The valid expressions are valid: SpEL reads every one of them on sample arguments. */
    @Test
    void validExpressionsEvaluate() throws Exception {
        for (Method method : declared(ValidKeys.class)) {
            for (String expression : expressions(method)) {
                if (!expression.contains("@")) {
                    evaluate(method, expression);
                }
            }
        }
    }

    /** A type a subclass or an implementation may extend, a Map, an Object: the value decides at run time, so they pass. */
    @Test
    void expressionsOnTypesThatAreNotClosedPass() throws Exception {
        assertThat(source.validate(UndecidableKeys.class)).isEmpty();
        Method nonFinal = UndecidableKeys.class.getMethod("nonFinalClass", Draft.class);
        EvaluationContext context = evaluator.context(nonFinal, new Object[] {new ExtendedDraft()}, false, new UndecidableKeys(), UndecidableKeys.class);
        assertThat(evaluator.parse(new AnnotatedElementKey(nonFinal, UndecidableKeys.class), "#draft.extra").getValue(context))
                .as("read on the subclass").isEqualTo("x");
    }

    /** A bad expression still fails in its own words before the property check: the check adds nothing there. */
    @Test
    void anUnknownParameterIsReportedOnceByTheParameterCheck() {
        assertThatThrownBy(() -> source.operation(Unknown.class.getMethod("run", Order.class), Unknown.class))
                .isInstanceOf(LockAnnotationException.class)
                .hasMessageContaining("'#ordr', which is not a parameter")
                .hasMessageNotContaining("has no such property");
    }

    /** A misspelt parameter name. */
    public static class Unknown {
        /** Locked by a parameter that does not exist. */
        @DistributedLock(key = "#ordr.idd")
        public void run(Order order) {
        }
    }

    private String problemOf(String method) {
        List<String> problems = source.validate(BadKeys.class).stream()
                .filter(problem -> problem.startsWith("Invalid @DistributedLock on " + BadKeys.class.getName() + "." + method + "("))
                .toList();
        assertThat(problems).as("problems of " + method).hasSize(1);
        return problems.get(0);
    }

    private static List<Method> declared(Class<?> type) {
        return Arrays.stream(type.getDeclaredMethods()).filter(m -> m.isAnnotationPresent(DistributedLock.class)).toList();
    }

    private static List<String> expressions(Method method) {
        DistributedLock lock = method.getAnnotation(DistributedLock.class);
        List<String> expressions = new ArrayList<>(lock.key().isBlank() ? List.of(lock.keys()) : List.of(lock.key()));
        if (!lock.condition().isBlank()) {
            expressions.add(lock.condition());
        }
        if (!lock.abortIf().isBlank()) {
            expressions.add(lock.abortIf());
        }
        return expressions;
    }

    private Object evaluate(Method method, String expression) throws Exception {
        Object target = method.getDeclaringClass().getDeclaredConstructor().newInstance();
        Object[] args = Arrays.stream(method.getParameterTypes()).map(LockOperationSourcePropertyCheckTest::sample).toArray();
        EvaluationContext context = evaluator.context(method, args, false, target, method.getDeclaringClass());
        return evaluator.parse(new AnnotatedElementKey(method, method.getDeclaringClass()), expression).getValue(context);
    }

    private static Object sample(Class<?> type) {
        Order order = new Order("o-1", new Customer("ann"));
        if (type == Order.class) {
            return order;
        }
        if (type == Order[].class) {
            return new Order[] {order};
        }
        if (type == List.class) {
            return List.of(order);
        }
        if (type == Map.class) {
            return Map.of("a", "x");
        }
        if (type == Account.class) {
            return new Account();
        }
        if (type == int.class) {
            return 7;
        }
        throw new IllegalArgumentException("no sample " + type);
    }
}
