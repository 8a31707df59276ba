package dev.dlock.aspect;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.FencingToken;
import dev.dlock.core.LockManager;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.RecordingBackend;
import dev.dlock.annotation.OnFailure;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/** A bad annotation fails the context start, naming class, method and attribute. */
class StartupValidationTest {

    public static class BadSpel {
        @DistributedLock(key = "#id +")
        public void run(String id) {
        }
    }

    public static class UnknownParameter {
        @DistributedLock(key = "#orderId")
        public void run(String id) {
        }
    }

    public static class IndexOutOfRange {
        @DistributedLock(key = "#p2")
        public void run(String id) {
        }
    }

    public static class UnknownBean {
        @DistributedLock(key = "@nowhere.keyFor(#id)")
        public void run(String id) {
        }
    }

    public static class BadCondition {
        @DistributedLock(key = "#id", condition = "#id ==")
        public void run(String id) {
        }
    }

    public static class BadAbortIf {
        @DistributedLock(key = "#id", abortIf = "#nope")
        public void run(String id) {
        }
    }

    public static class BadWaitTime {
        @DistributedLock(key = "#id", waitTime = "soon")
        public void run(String id) {
        }
    }

    public static class BadLeaseTime {
        @DistributedLock(key = "#id", leaseTime = "5 parsecs")
        public void run(String id) {
        }
    }

    public static class ZeroLeaseTime {
        @DistributedLock(key = "#id", leaseTime = "0")
        public void run(String id) {
        }
    }

    public static class TenMillisecondLease {
        @DistributedLock(key = "#id", leaseTime = "10ms")
        public void run(String id) {
        }
    }

    public static class LockAtLeastForBeyondLease {
        @DistributedLock(key = "#id", leaseTime = "1m", lockAtLeastFor = "2m")
        public void run(String id) {
        }
    }

    public static class MissingPlaceholder {
        @DistributedLock(key = "#id", waitTime = "${no.such.property}")
        public void run(String id) {
        }
    }

    public static class NoKey {
        @DistributedLock
        public void run(String id) {
        }
    }

    public static class KeyAndKeys {
        @DistributedLock(key = "#id", keys = {"#id"})
        public void run(String id) {
        }
    }

    public static class MissingFallback {
        @DistributedLock(key = "#id", onFailure = OnFailure.FALLBACK, fallback = "nowhere")
        public String run(String id) {
            return id;
        }
    }

    public static class FallbackWrongParameters {
        @DistributedLock(key = "#id", onFailure = OnFailure.FALLBACK, fallback = "other")
        public String run(String id) {
            return id;
        }

        public String other(long id) {
            return "x";
        }
    }

    public static class FallbackWrongReturnType {
        @DistributedLock(key = "#id", onFailure = OnFailure.FALLBACK, fallback = "other")
        public String run(String id) {
            return id;
        }

        public Integer other(String id) {
            return 1;
        }
    }

    public static class FallbackWithoutStrategy {
        @DistributedLock(key = "#id", fallback = "other")
        public String run(String id) {
            return id;
        }

        public String other(String id) {
            return id;
        }
    }

    public static class FallbackStrategyWithoutFallback {
        @DistributedLock(key = "#id", onFailure = OnFailure.FALLBACK)
        public String run(String id) {
            return id;
        }
    }

    public static class PrivateLockedMethod {
        public void run(String id) {
            locked(id);
        }

        @DistributedLock(key = "#id")
        private void locked(String id) {
        }
    }

    public static class StaticLockedMethod {
        @DistributedLock(key = "#id")
        public static void locked(String id) {
        }
    }

    public static class FinalLockedMethod {
        @DistributedLock(key = "#id")
        public final void locked(String id) {
        }
    }

    /** Calls its own locked method through {@code this} (bypassing the proxy), and once through the proxy it was given. */
    public static class SelfInvoking {
        private SelfInvoking self;

        public void shipAll(List<String> ids) {
            for (String id : ids) {
                ship(id.trim());
            }
        }

        public void shipThroughTheProxy(String id) {
            self.ship(id);
        }

        @DistributedLock(key = "#id")
        public void ship(String id) {
        }

        @DistributedLock(key = "#id")
        public void onlyCalledFromOutside(String id) {
        }
    }

    public static class TwoTokenParameters {
        @DistributedLock(key = "#id")
        public void run(String id, @FencingToken long token, @FencingToken long again) {
        }
    }

    public static class TokenOfTheWrongType {
        @DistributedLock(key = "#id")
        public void run(String id, @FencingToken String token) {
        }
    }

    public static class OneTokenForSeveralKeys {
        @DistributedLock(keys = {"#id", "#other"})
        public void run(String id, String other, @FencingToken long token) {
        }
    }

    public static class TokensByKeyOfTheWrongType {
        @DistributedLock(key = "#id")
        public void run(String id, @FencingToken Map<String, Integer> tokens) {
        }
    }

    /** An interface whose method takes a token. */
    public interface TokenTaking {
        /** Runs with the token. */
        void run(String id, @FencingToken long token);
    }

    public static class TokenOnTheInterfaceOfAnUnlockedMethod implements TokenTaking {
        @Override
        public void run(String id, long token) {
        }
    }

    public static class TokenWithoutALock {
        public void run(String id, @FencingToken long token) {
        }
    }

    static Stream<Arguments> badTokenParameters() {
        return Stream.of(
                Arguments.of(TwoTokenParameters.class, "run(String, long, long)", "parameter 'again' (#2): a second @FencingToken parameter"),
                Arguments.of(TokenOfTheWrongType.class, "run(String, String)",
                        "parameter 'token' (#1): is java.lang.String; a fencing token parameter is a long or Long"),
                Arguments.of(OneTokenForSeveralKeys.class, "run(String, String, long)", "parameter 'token' (#2): the method locks several 'keys'"),
                Arguments.of(TokensByKeyOfTheWrongType.class, "run(String, Map)", "is java.util.Map<java.lang.String, java.lang.Integer>"),
                Arguments.of(TokenWithoutALock.class, "run(String, long)", "the method has no @DistributedLock, so nothing passes it a token"),
                Arguments.of(TokenOnTheInterfaceOfAnUnlockedMethod.class, "run(String, long)", "the method has no @DistributedLock"));
    }

    /** A fencing token parameter that would get no token, or one it cannot hold, fails the start naming the method and parameter. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("badTokenParameters")
    void aBadFencingTokenParameterFailsTheStart(Class<?> beanClass, String method, String why) {
        Throwable failure = catchThrowable(() -> TestContexts.start(context -> {
            context.register(TestContexts.DefaultLocking.class);
            context.registerBean(beanClass);
        }).close());
        assertThat(findLockAnnotationException(failure).getMessage()).contains(beanClass.getName() + "." + method).contains(why);
    }

    /**
     * The check reads every bean's methods, the JDK's own classes' too (an MBean server, a collection): it must not make
     * their private methods accessible, which the JDK's modules refuse.
     */
    @Test
    void aBeanOfAJdkClassWithPrivateMethodsPassesTheCheck() {
        TestContexts.start(context -> {
            context.register(TestContexts.DefaultLocking.class);
            context.registerBean("mbeanServer", javax.management.MBeanServer.class, java.lang.management.ManagementFactory::getPlatformMBeanServer);
        }).close();
    }

    /** A store that issues no fencing tokens (memcached) cannot give one to a parameter: the start fails naming the store. */
    @Test
    void aFencingTokenParameterOnAStoreWithoutTokensFailsTheStart() {
        RecordingBackend withoutTokens = new RecordingBackend(new InMemoryLockBackend());
        withoutTokens.alterCapabilities(declared -> declared.withFencing(false));
        Throwable failure = catchThrowable(() -> startProxyingInterfaces(withoutTokens, FencingTokenAtAcquisitionTest.TokenLedger.class));
        assertThat(findLockAnnotationException(failure).getMessage())
                .contains(FencingTokenAtAcquisitionTest.TokenLedger.class.getName() + ".plain(String, long)")
                .contains("parameter 'token' (#1): the lock store RecordingBackend issues no fencing tokens");
        assertThat(withoutTokens.acquires).as("store calls: the start failed before any").hasValue(0);
    }

    /** A service the context proxies through its interface (a JDK proxy, Spring's default without proxyTargetClass). */
    public interface Shipping {
        /** Ships the order. */
        void run(String id);
    }

    public static class BadSpelBehindAnInterface implements Shipping {
        @Override
        @DistributedLock(key = "#id +")
        public void run(String id) {
        }
    }

    /**
     * A bean proxied through its interface is checked as its own class: the proxy's type, which is all the context
     * tells by name, has no annotations (it was passed unchecked before).
     */
    @Test
    void aBadAnnotationOnABeanProxiedThroughItsInterfaceFailsTheStart() {
        Throwable failure = catchThrowable(() -> startProxyingInterfaces(TestContexts.STORE, BadSpelBehindAnInterface.class));
        assertThat(findLockAnnotationException(failure).getMessage())
                .contains(BadSpelBehindAnInterface.class.getName() + ".run(String)")
                .contains("attribute 'key'").contains("does not parse");
    }

    public static class FinalBehindAnInterface implements Shipping {
        /** Set by the call: whether another manager found the key held meanwhile (the bean is reachable by its interface only). */
        static final java.util.concurrent.atomic.AtomicBoolean HELD_DURING_THE_CALL = new java.util.concurrent.atomic.AtomicBoolean();

        @Override
        @DistributedLock(key = "#id")
        public final void run(String id) {
            LockManager other = TestContexts.otherJvm();
            try {
                HELD_DURING_THE_CALL.set(other.tryAcquire("FinalBehindAnInterface.run:" + id).isEmpty());
            } finally {
                other.close();
            }
        }
    }

    /**
     * An interface-based proxy reaches a final method through the interface method it implements: such a method starts
     * and is locked (only a class-based proxy, which overrides methods, cannot reach a final one).
     */
    @Test
    void aFinalLockedMethodOfABeanProxiedThroughItsInterfaceStartsAndIsLocked() {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.registerBean(LockManager.class, () -> LockManager.builder(TestContexts.STORE).build());
        context.register(TestContexts.DefaultLocking.class);
        context.registerBean(FinalBehindAnInterface.class);
        context.refresh();
        try {
            Shipping shipping = context.getBean(Shipping.class);
            assertThat(java.lang.reflect.Proxy.isProxyClass(shipping.getClass())).as("proxied through its interface").isTrue();
            shipping.run("42");
            assertThat(FinalBehindAnInterface.HELD_DURING_THE_CALL).as("locked").isTrue();
        } finally {
            context.close();
        }
    }

    /** Starts (and closes) a context with {@code bean} over {@code store}, proxied as Spring does by default: through its interfaces. */
    private static void startProxyingInterfaces(LockBackend store, Class<?> bean) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.registerBean(LockManager.class, () -> LockManager.builder(store).build());
        context.register(TestContexts.DefaultLocking.class);
        context.registerBean(bean);
        context.refresh();
        context.close();
    }

    static Stream<Arguments> unreachableThroughAProxy() {
        return Stream.of(
                Arguments.of(PrivateLockedMethod.class, "private"),
                Arguments.of(StaticLockedMethod.class, "static"),
                Arguments.of(FinalLockedMethod.class, "final"));
    }

    /** A Spring proxy cannot intercept these: the method would run without its lock, so the start fails naming it. */
    @ParameterizedTest(name = "{1}")
    @MethodSource("unreachableThroughAProxy")
    void aLockedMethodAProxyCannotInterceptFailsTheStart(Class<?> beanClass, String modifier) {
        Throwable failure = catchThrowable(() -> TestContexts.start(context -> {
            context.register(TestContexts.DefaultLocking.class);
            context.registerBean(beanClass);
        }).close());
        assertThat(findLockAnnotationException(failure).getMessage())
                .contains(beanClass.getName() + ".locked(String)")
                .contains("it is " + modifier)
                .contains("cannot be intercepted by a Spring proxy")
                .contains("make it a public, non-static, non-final method, or use AspectJ weaving")
                .contains("docs/annotation.md#without-spring-aop-compile-time-weaving");
    }

    /** A locked method called through {@code this} runs unlocked under a proxy: one warning per method, naming the callers. */
    @Test
    void selfInvocationOfALockedMethodIsWarnedOnceAtStartup() {
        Logger logger = (Logger) LoggerFactory.getLogger(DistributedLockAnnotationValidator.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        try {
            TestContexts.start(context -> {
                context.register(TestContexts.DefaultLocking.class);
                context.registerBean(SelfInvoking.class);
            }).close();
        } finally {
            logger.detachAppender(logged);
        }
        List<String> warnings = logged.list.stream().filter(event -> event.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage).toList();
        assertThat(warnings).as("WARN lines of the validator").hasSize(1);
        assertThat(warnings.get(0))
                .contains(SelfInvoking.class.getName() + ".ship(String)")
                .contains("shipAll(List)")
                .doesNotContain("shipThroughTheProxy")
                .doesNotContain("onlyCalledFromOutside")
                .contains("runs without the lock")
                .contains("docs/annotation.md#without-spring-aop-compile-time-weaving");
    }

    static Stream<Arguments> badAnnotations() {
        return Stream.of(
                Arguments.of(BadSpel.class, "key", "does not parse"),
                Arguments.of(UnknownParameter.class, "key", "'#orderId', which is not a parameter; the parameters are [id]"),
                Arguments.of(IndexOutOfRange.class, "key", "'#p2' but the method has 1 parameter"),
                Arguments.of(UnknownBean.class, "key", "bean 'nowhere', which does not exist"),
                Arguments.of(BadCondition.class, "condition", "does not parse"),
                Arguments.of(BadAbortIf.class, "abortIf", "'#nope', which is not a parameter"),
                Arguments.of(BadWaitTime.class, "waitTime", "'soon' is not a duration"),
                Arguments.of(BadLeaseTime.class, "leaseTime", "'5 parsecs' is not a duration"),
                Arguments.of(ZeroLeaseTime.class, "leaseTime", "must be at least 30 ms, was PT0S"),
                // The rule of dlock.lease-time and LockRequest.leaseTime: one rule for every lease.
                Arguments.of(TenMillisecondLease.class, "leaseTime", "must be at least 30 ms, was PT0.01S"),
                Arguments.of(LockAtLeastForBeyondLease.class, "lockAtLeastFor", "lockAtLeastFor (PT2M) must not exceed the fixed leaseTime (PT1M)"),
                Arguments.of(MissingPlaceholder.class, "waitTime", "no.such.property"),
                Arguments.of(NoKey.class, "key", "neither 'key' nor 'keys' is set"),
                Arguments.of(KeyAndKeys.class, "key", "'key' and 'keys' are both set"),
                Arguments.of(MissingFallback.class, "fallback", "no method nowhere(String"),
                Arguments.of(FallbackWrongParameters.class, "fallback", "no method other(String"),
                Arguments.of(FallbackWrongReturnType.class, "fallback", "returns java.lang.Integer"),
                Arguments.of(FallbackWithoutStrategy.class, "fallback", "set onFailure = FALLBACK"),
                Arguments.of(FallbackStrategyWithoutFallback.class, "fallback", "needs 'fallback'"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badAnnotations")
    void aBadAnnotationFailsTheStartNamingClassMethodAndAttribute(Class<?> beanClass, String attribute, String why) {
        Throwable failure = catchThrowable(() -> TestContexts.start(context -> {
            context.register(TestContexts.DefaultLocking.class);
            context.registerBean(beanClass);
        }).close());
        LockAnnotationException invalid = findLockAnnotationException(failure);
        assertThat(invalid.getMessage())
                .contains(beanClass.getName() + ".run(String)")
                .contains("attribute '" + attribute + "'")
                .contains(why);
    }

    public static class MisspeltPropertyOfARecord {
        @DistributedLock(key = "#order.idd")
        public void run(LockOperationSourcePropertyCheckTest.Order order) {
        }
    }

    /**
     * A property the parameter's record does not have fails the start like an unknown parameter, naming the type and
     * what it has (before, the start passed and every call failed with SpEL's EL1008E).
     */
    @Test
    void aPropertyTheRecordLacksFailsTheStart() {
        Throwable failure = catchThrowable(() -> TestContexts.start(context -> {
            context.register(TestContexts.DefaultLocking.class);
            context.registerBean(MisspeltPropertyOfARecord.class);
        }).close());
        assertThat(findLockAnnotationException(failure).getMessage())
                .contains("1 invalid @DistributedLock annotation(s)")
                .contains("Invalid @DistributedLock on " + MisspeltPropertyOfARecord.class.getName() + ".run(Order): attribute 'key': "
                        + "expression '#order.idd' refers to 'idd' of '#order', but "
                        + LockOperationSourcePropertyCheckTest.Order.class.getName() + " has no such property")
                .contains("Order has: customer, id");
    }

    @Test
    void missingParameterNamesSayToCompileWithParameters() throws Exception {
        Path dir = Files.createTempDirectory("dlock-no-parameters");
        Path source = dir.resolve("NoParameterNames.java");
        Files.writeString(source, """
                package dlock.generated;
                public class NoParameterNames {
                    @dev.dlock.annotation.DistributedLock(key = "#order")
                    public void run(String order) {
                    }
                }
                """);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        String annotations = Path.of(DistributedLock.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        int status = javac.run(null, null, null, "--release", "17", "-classpath", annotations, "-d", dir.toString(), source.toString());
        assertThat(status).isZero();
        try (URLClassLoader loader = new URLClassLoader(new URL[] {dir.toUri().toURL()}, getClass().getClassLoader())) {
            Class<?> compiledWithoutParameters = loader.loadClass("dlock.generated.NoParameterNames");
            Throwable failure = catchThrowable(() -> TestContexts.start(context -> {
                context.setClassLoader(loader);
                context.register(TestContexts.DefaultLocking.class);
                context.registerBean(compiledWithoutParameters);
            }).close());
            assertThat(findLockAnnotationException(failure).getMessage())
                    .contains("dlock.generated.NoParameterNames.run(String)")
                    .contains("attribute 'key'")
                    .contains("compile with '-parameters'");
        }
    }

    /** Without Boot, {@code @EnableDistributedLocks} reads dlock.abort-check-interval itself; LockRequest's rule names it. */
    @ParameterizedTest(name = "dlock.abort-check-interval={0}")
    @ValueSource(strings = {"0", "PT0S", "soon"})
    void aBadAbortCheckIntervalFailsTheStartNamingTheProperty(String value) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("test",
                Map.of("dlock.abort-check-interval", value)));
        context.register(TestContexts.LockInfrastructure.class, TestContexts.DefaultLocking.class);
        Throwable failure = catchThrowable(context::refresh);
        context.close();
        StringBuilder messages = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        assertThat(messages).contains("dlock.abort-check-interval").contains(value);
    }

    @Test
    void validAnnotationsStartFine() {
        AnnotationConfigApplicationContext context = TestContexts.start(DistributedLockAspectTest.Services.class);
        context.close();
    }

    private static LockAnnotationException findLockAnnotationException(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof LockAnnotationException invalid) {
                return invalid;
            }
        }
        throw new AssertionError("expected a LockAnnotationException, got " + failure, failure);
    }
}
