package dev.dlock.boot.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.dlock.boot.BootLine;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.DistributedLockMetricsAutoConfiguration;
import dev.dlock.boot.DistributedLockObservationAutoConfiguration;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import io.micrometer.core.instrument.LongTaskTimer;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.config.MeterFilterReply;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * dlock's meters in a Boot application with Boot's metrics and observation auto-configurations: one meter per
 * measure, made through one path (the timers by Boot's meter observation handler from dlock's observations), no
 * filter that hides a meter, a long-task timer of what is held now that goes back to 0, and percentile histograms of
 * the timers unless the application's own histogram setting says otherwise. Names are written out: they are the
 * public contract.
 */
class LockMetersTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistributedLockAutoConfiguration.class,
                    DistributedLockMetricsAutoConfiguration.class, DistributedLockObservationAutoConfiguration.class))
            .withConfiguration(BootLine.METRICS)
            .withConfiguration(BootLine.OBSERVATION)
            // A registry that publishes histogram buckets (a simple registry keeps none), as the README's application has.
            .withBean(PrometheusMeterRegistry.class, () -> new PrometheusMeterRegistry(PrometheusConfig.DEFAULT))
            .withPropertyValues("dlock.store=in-memory");

    /** dlock's filters deny no meter: neither its own meters, nor an application's that share a prefix with them. */
    @Test
    void noFilterDeniesAMeter() {
        runner.run(context -> {
            List<Meter.Id> ids = List.of(
                    id("dlock.lock.acquire", Meter.Type.TIMER), id("dlock.lock.acquire.active", Meter.Type.LONG_TASK_TIMER),
                    id("dlock.lock.hold", Meter.Type.TIMER), id("dlock.lock.hold.active", Meter.Type.LONG_TASK_TIMER),
                    id("dlock.lock.holder.audit", Meter.Type.COUNTER), id("orders.placed", Meter.Type.COUNTER));
            for (MeterFilter filter : context.getBeansOfType(MeterFilter.class).values()) {
                for (Meter.Id id : ids) {
                    assertThat(filter.accept(id)).as("%s on %s", filter, id.getName()).isNotEqualTo(MeterFilterReply.DENY);
                }
            }
        });
    }

    /** What is held now is a long-task timer per lock name: two readers count 2, then 1, then 0 as each releases. */
    @Test
    void whatIsHeldNowIsALongTaskTimerThatGoesBackToZero() {
        runner.run(context -> {
            LockManager locks = context.getBean(LockManager.class);
            MeterRegistry registry = context.getBean(MeterRegistry.class);
            LockRequest read = LockRequest.builder("doc-7").name("doc").kind(LockKind.READ).build();
            LockHandle first = locks.acquire(read);
            LockHandle second = CompletableFuture.supplyAsync(() -> locks.acquire(read)).get(10, TimeUnit.SECONDS);

            LongTaskTimer held = registry.get("dlock.lock.hold.active").tag("lock.name", "doc").longTaskTimer();
            assertThat(held.activeTasks()).isEqualTo(2);
            first.close();
            assertThat(held.activeTasks()).isEqualTo(1);
            second.close();
            assertThat(held.activeTasks()).isZero();
            assertThat(registry.get("dlock.lock.hold").tag("lock.name", "doc").timer().count()).isEqualTo(2);
            assertThat(registry.get("dlock.lock.acquire.active").tag("lock.name", "doc").longTaskTimer().activeTasks()).isZero();
        });
    }

    /** One measure, one meter: the acquisitions are timed once, under dlock.lock.*, and a lost lease is counted there too. */
    @Test
    void eachMeasureHasOneMeterUnderOneFamilyOfNames() {
        runner.run(context -> {
            context.getBean(LockManager.class).acquire(LockRequest.builder("o-1").name("orders").build()).close();
            MeterRegistry registry = context.getBean(MeterRegistry.class);

            assertThat(registry.get("dlock.lock.acquire").tag("lock.name", "orders").tag("result", "acquired").timers())
                    .singleElement().satisfies(timer -> assertThat(timer.count()).isEqualTo(1));
            assertThat(registry.get("dlock.lock.lease.lost").tag("lock.name", "orders").counter().count()).isZero();
            assertThat(registry.getMeters()).extracting(meter -> meter.getId().getName()).filteredOn(name -> name.startsWith("dlock."))
                    .allMatch(name -> name.startsWith("dlock.lock.") || name.startsWith("dlock.watchdog."));
        });
    }

    /** The timers publish percentile histograms on an application that configured nothing (the quick start's). */
    @Test
    void theTimersPublishPercentileHistogramsByDefault() {
        runner.run(context -> {
            context.getBean(LockManager.class).acquire(LockRequest.builder("o-2").name("orders").build()).close();
            MeterRegistry registry = context.getBean(MeterRegistry.class);

            for (String timer : List.of("dlock.lock.acquire", "dlock.lock.hold")) {
                assertThat(registry.get(timer).tag("lock.name", "orders").timer().takeSnapshot().histogramCounts())
                        .as("%s histogram buckets", timer).isNotEmpty();
            }
        });
    }

    /** An application's own histogram setting for dlock's meters wins over dlock's default. */
    @Test
    void theApplicationsHistogramSettingWins() {
        runner.withPropertyValues("management.metrics.distribution.percentiles-histogram.dlock=false").run(context -> {
            context.getBean(LockManager.class).acquire(LockRequest.builder("o-3").name("orders").build()).close();
            MeterRegistry registry = context.getBean(MeterRegistry.class);

            assertThat(registry.get("dlock.lock.acquire").tag("lock.name", "orders").timer().takeSnapshot().histogramCounts())
                    .isEmpty();
        });
    }

    private static Meter.Id id(String name, Meter.Type type) {
        return new Meter.Id(name, Tags.of("lock.name", "orders"), null, null, type);
    }
}
