package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.OnFailure;
import dev.dlock.core.LockNotAcquiredException;
import org.junit.jupiter.api.Test;
import org.springframework.aot.generate.ClassNameGenerator;
import org.springframework.aot.generate.DefaultGenerationContext;
import org.springframework.aot.generate.InMemoryGeneratedFiles;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.javapoet.ClassName;


import static org.assertj.core.api.Assertions.assertThat;

/** What the aspect's AOT registrar and bean processor hint, checked with Spring's {@code RuntimeHintsPredicates}. */
class DistributedLockAotHintsTest {

    /** A key's parameter type. */
    public record Order(String id, Customer customer) {
    }

    /** A type a getter of the parameter returns: hinted one level deep. */
    public record Customer(String region) {
    }

    /** A class parameter with JavaBean getters. */
    public static class Shipment {
        public String getTrackingNumber() {
            return "T1";
        }
    }

    public static class OrderService {
        @DistributedLock(key = "#order.id")
        public void ship(Order order) {
        }

        @DistributedLock(key = "#shipment.trackingNumber", onFailure = OnFailure.FALLBACK, fallback = "busy")
        public String track(Shipment shipment, int attempt) {
            return "tracked";
        }

        private String busy(Shipment shipment, int attempt, LockNotAcquiredException failure) {
            return "busy";
        }
    }

    public static class PlainService {
        public void ship(Order order) {
        }
    }

    @Test
    void aotFactoriesListTheRegistrarAndTheProcessor() {
        SpringFactoriesLoader aotFactories = SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories");
        assertThat(aotFactories.load(RuntimeHintsRegistrar.class)).hasAtLeastOneElementOfType(DistributedLockRuntimeHints.class);
        assertThat(aotFactories.load(BeanRegistrationAotProcessor.class))
                .hasAtLeastOneElementOfType(DistributedLockBeanRegistrationAotProcessor.class);
    }

    @Test
    void theRegistrarHintsTheExpressionRootAndTheAdvice() throws Exception {
        RuntimeHints hints = new RuntimeHints();
        new DistributedLockRuntimeHints().registerHints(hints, getClass().getClassLoader());

        assertThat(RuntimeHintsPredicates.reflection().onType(LockExpressionRoot.class)
                .withMemberCategory(MemberCategory.INVOKE_PUBLIC_METHODS)).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LockExpressionRoot.class, "getMethodName")).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(DistributedLockAspect.class.getMethod(
                "aroundLockedMethod", org.aspectj.lang.ProceedingJoinPoint.class))).accepts(hints);
    }

    @Test
    void aRecordParameterGetsItsAccessorsAndTheTypesTheyReturn() throws Exception {
        RuntimeHints hints = hintsOf(OrderService.class);

        assertThat(RuntimeHintsPredicates.reflection().onType(Order.class)
                .withMemberCategory(MemberCategory.INVOKE_PUBLIC_METHODS)).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Order.class.getMethod("id"))).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Order.class.getMethod("customer"))).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Customer.class.getMethod("region"))).accepts(hints);
    }

    @Test
    void aBeanParameterGetsItsGettersAndTheFallbackIsInvocable() throws Exception {
        RuntimeHints hints = hintsOf(OrderService.class);

        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(Shipment.class.getMethod("getTrackingNumber"))).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(OrderService.class.getDeclaredMethod("busy",
                Shipment.class, int.class, LockNotAcquiredException.class))).accepts(hints);
        // The JDK's types are the application's to hint: String would bring every public method of String.
        assertThat(RuntimeHintsPredicates.reflection().onType(String.class)).rejects(hints);
    }

    @Test
    void aBeanWithoutLockedMethodsGetsNoContribution() {
        assertThat(contribution(PlainService.class)).isNull();
    }

    private static RuntimeHints hintsOf(Class<?> beanClass) {
        BeanRegistrationAotContribution contribution = contribution(beanClass);
        assertThat(contribution).isNotNull();
        DefaultGenerationContext generation = new DefaultGenerationContext(
                new ClassNameGenerator(ClassName.get("dev.dlock.aspect", "AotTest")), new InMemoryGeneratedFiles());
        contribution.applyTo(generation, null);
        return generation.getRuntimeHints();
    }

    private static BeanRegistrationAotContribution contribution(Class<?> beanClass) {
        DefaultListableBeanFactory beanFactory = new DefaultListableBeanFactory();
        beanFactory.registerBeanDefinition("service", new RootBeanDefinition(beanClass));
        return new DistributedLockBeanRegistrationAotProcessor().processAheadOfTime(RegisteredBean.of(beanFactory, "service"));
    }

}
