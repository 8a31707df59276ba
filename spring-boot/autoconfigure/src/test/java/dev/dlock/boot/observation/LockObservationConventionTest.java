package dev.dlock.boot.observation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.dlock.boot.BootLine;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.DistributedLockMetricsAutoConfiguration;
import dev.dlock.boot.DistributedLockObservationAutoConfiguration;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import io.micrometer.common.KeyValues;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;

/**
 * What an application can change in dlock's observations the Boot way: a convention bean replaces the default one
 * (its tags reach spans and timers alike), and Boot's {@code management.observations.enable.dlock=false} turns them off.
 * A lease lost while held is on its hold span.
 */
class LockObservationConventionTest {

    /** An application's convention: the default tags, and the team that owns the lock. */
    static class TeamConvention extends DefaultLockAcquireObservationConvention {
        @Override
        public KeyValues getLowCardinalityKeyValues(LockAcquireObservationContext context) {
            return super.getLowCardinalityKeyValues(context).and("team", "billing");
        }
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, DistributedLockAutoConfiguration.class,
                    DistributedLockMetricsAutoConfiguration.class, DistributedLockObservationAutoConfiguration.class))
            .withConfiguration(BootLine.METRICS)
            .withConfiguration(BootLine.OBSERVATION)
            .withUserConfiguration(LockObservationTest.TracedApplication.class)
            .withPropertyValues("dlock.store=in-memory");

    @Test
    void anApplicationsConventionBeanTagsTheSpanAndTheTimer() {
        runner.withBean(LockAcquireObservationConvention.class, TeamConvention::new).run(context -> {
            context.getBean(LockManager.class).acquire(LockRequest.builder("i-1").name("invoice").build()).close();

            SimpleSpan acquire = span(context.getBean(SimpleTracer.class), "dlock acquire invoice");
            assertThat(acquire.getTags()).containsEntry("team", "billing").containsEntry("lock.name", "invoice");
            assertThat(context.getBean(MeterRegistry.class).get("dlock.lock.acquire").tag("team", "billing")
                    .tag("lock.name", "invoice").timer().count()).isEqualTo(1);
            assertThat(span(context.getBean(SimpleTracer.class), "dlock hold invoice").getTags())
                    .as("the hold keeps its default convention").doesNotContainKey("team");
        });
    }

    @Test
    void aLeaseLostWhileHeldIsOnTheHoldSpan() {
        runner.run(context -> {
            LockManager locks = context.getBean(LockManager.class);
            // A fixed lease: its holder learns of the operator's forced release at its release.
            LockHandle handle = locks.acquire(LockRequest.builder("i-2").name("invoice").leaseTime(Duration.ofSeconds(30)).build());
            locks.admin().forceRelease("invoice", "i-2");
            assertThatThrownBy(handle::close).isInstanceOf(LockLostException.class);

            assertThat(span(context.getBean(SimpleTracer.class), "dlock hold invoice").getTags())
                    .hasEntrySatisfying("lease.lost", reason -> assertThat(reason).contains("forced release"));
            assertThat(context.getBean(MeterRegistry.class).get("dlock.lock.lease.lost").tag("lock.name", "invoice")
                    .counter().count()).isEqualTo(1);
        });
    }

    @Test
    void bootsObservationSwitchTurnsThemOff() {
        runner.withPropertyValues("management.observations.enable.dlock=false").run(context -> {
            context.getBean(LockManager.class).acquire(LockRequest.builder("i-3").name("invoice").build()).close();

            assertThat(context.getBean(SimpleTracer.class).getSpans()).isEmpty();
            assertThat(context.getBean(MeterRegistry.class).find("dlock.lock.acquire").meters()).isEmpty();
        });
    }

    private static SimpleSpan span(SimpleTracer tracer, String name) {
        List<SimpleSpan> spans = List.copyOf(tracer.getSpans());
        return spans.stream().filter(s -> name.equals(s.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("no span " + name + " among " + spans.stream().map(SimpleSpan::getName).toList()));
    }
}
