package dev.dlock.boot.web;

import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.DistributedLockWebAutoConfiguration;
import dev.dlock.core.LockNotAcquiredException;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.http.ProblemDetail;

import java.time.Duration;
import java.util.concurrent.CompletionException;

import static org.assertj.core.api.Assertions.assertThat;

/** When the 409 answer is configured, and what it carries. */
class LockBusyAutoConfigurationTest {

    private static final AutoConfigurations DLOCK = AutoConfigurations.of(DistributedLockAutoConfiguration.class,
            DistributedLockWebAutoConfiguration.class);

    private final LockNotAcquiredException busy = timedOut(Duration.ofMillis(2_300));

    @Test
    void onSpringMvcAResolverOnWebFluxAnExceptionHandlerInAnotherApplicationNeither() {
        new WebApplicationContextRunner().withConfiguration(DLOCK).withPropertyValues("dlock.store=in-memory")
                .run(context -> assertThat(context).hasSingleBean(LockNotAcquiredExceptionResolver.class)
                        .doesNotHaveBean(LockNotAcquiredWebExceptionHandler.class));
        new ReactiveWebApplicationContextRunner().withConfiguration(DLOCK).withPropertyValues("dlock.store=in-memory")
                .run(context -> assertThat(context).hasSingleBean(LockNotAcquiredWebExceptionHandler.class)
                        .doesNotHaveBean(LockNotAcquiredExceptionResolver.class));
        new ApplicationContextRunner().withConfiguration(DLOCK).withPropertyValues("dlock.store=in-memory")
                .run(context -> assertThat(context).doesNotHaveBean(LockNotAcquiredProblems.class));
    }

    @Test
    void switchedOffByItsProperty() {
        new WebApplicationContextRunner().withConfiguration(DLOCK)
                .withPropertyValues("dlock.store=in-memory", "dlock.web.problem-details.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockNotAcquiredExceptionResolver.class));
        new ReactiveWebApplicationContextRunner().withConfiguration(DLOCK)
                .withPropertyValues("dlock.store=in-memory", "dlock.web.problem-details.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockNotAcquiredWebExceptionHandler.class));
    }

    @Test
    void theKeyIsInTheProblemOnlyWhenConfigured() {
        new WebApplicationContextRunner().withConfiguration(DLOCK).withPropertyValues("dlock.store=in-memory").run(context -> {
            ProblemDetail problem = context.getBean(LockNotAcquiredProblems.class).problem(busy, "/orders/42");
            assertThat(problem.getProperties()).containsEntry(LockNotAcquiredProblems.LOCK, "orders")
                    .doesNotContainKey(LockNotAcquiredProblems.KEY);
            assertThat(problem.getDetail()).doesNotContain("42");
        });
        new WebApplicationContextRunner().withConfiguration(DLOCK)
                .withPropertyValues("dlock.store=in-memory", "dlock.web.problem-details.include-key=true").run(context ->
                        assertThat(context.getBean(LockNotAcquiredProblems.class).problem(busy, "/orders/42").getProperties())
                                .containsEntry(LockNotAcquiredProblems.KEY, "orders:42"));
    }

    @Test
    void retryAfterIsTheWaitTimeRoundedUpOnlyAfterAWaitThatTimedOut() {
        LockNotAcquiredProblems problems = new LockNotAcquiredProblems(false);

        assertThat(problems.retryAfterSeconds(busy)).hasValue(3);
        assertThat(problems.retryAfterSeconds(timedOut(Duration.ofSeconds(5)))).hasValue(5);
        assertThat(problems.retryAfterSeconds(timedOut(Duration.ofMillis(40)))).hasValue(1);
        assertThat(problems.retryAfterSeconds(timedOut(Duration.ZERO))).as("tried once").isEmpty();
        assertThat(problems.retryAfterSeconds(new LockNotAcquiredException("orders", "orders:42",
                LockNotAcquiredException.Reason.TIMEOUT, Duration.ofSeconds(2)))).as("wait time not known").isEmpty();
        assertThat(problems.retryAfterSeconds(new LockNotAcquiredException("orders", "orders:42",
                LockNotAcquiredException.Reason.ABORTED, Duration.ofSeconds(2), Duration.ofSeconds(5))))
                .as("a retry would meet the abort condition").isEmpty();
    }

    private static LockNotAcquiredException timedOut(Duration waitTime) {
        return new LockNotAcquiredException("orders", "orders:42", LockNotAcquiredException.Reason.TIMEOUT, waitTime, waitTime);
    }

    @Test
    void foundAlsoAsTheCauseOfAnotherException() {
        assertThat(LockNotAcquiredProblems.find(new CompletionException(busy))).isSameAs(busy);
        assertThat(LockNotAcquiredProblems.find(new IllegalStateException("other"))).isNull();
    }
}
