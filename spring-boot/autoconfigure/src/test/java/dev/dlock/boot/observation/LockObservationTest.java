package dev.dlock.boot.observation;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.OnFailure;
import dev.dlock.boot.BootLine;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.DistributedLockMetricsAutoConfiguration;
import dev.dlock.boot.DistributedLockObservationAutoConfiguration;
import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;

/**
 * A Boot application with tracing and metrics (Boot's observation and meter auto-configurations, a tracer's handler):
 * a request that calls a {@code @DistributedLock} method shows an acquire span and a hold span under its own span,
 * tagged with the lock's name (and key, in spans only); every observation ends, carried with its own acquisition
 * (an asynchronous one ends on a dlock thread; two readers of one key end their own holds); the timers are the
 * observations', so meters and spans count the same acquisitions and timeouts.
 */
class LockObservationTest {

    /** The service under the lock. */
    public static class Reports {
        private final CountDownLatch release = new CountDownLatch(1);
        private final CountDownLatch entered = new CountDownLatch(1);

        @DistributedLock(name = "report", key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
        public String export(String id) {
            return "exported " + id;
        }

        /** Holds the lock of {@code id} until {@link #letGo()}. */
        @DistributedLock(name = "report", key = "#id")
        public void hold(String id) throws InterruptedException {
            entered.countDown();
            release.await(10, TimeUnit.SECONDS);
        }

        void awaitEntered() throws InterruptedException {
            entered.await(10, TimeUnit.SECONDS);
        }

        void letGo() {
            release.countDown();
        }
    }

    /** Records which observations started and which stopped, whatever thread reports them. */
    static class Lifecycles implements ObservationHandler<Observation.Context> {
        final List<Observation.Context> started = new CopyOnWriteArrayList<>();
        final List<Observation.Context> stopped = new CopyOnWriteArrayList<>();

        @Override
        public void onStart(Observation.Context context) {
            started.add(context);
        }

        @Override
        public void onStop(Observation.Context context) {
            stopped.add(context);
        }

        @Override
        public boolean supportsContext(Observation.Context context) {
            return true;
        }

        /** The one observation named {@code name} whose parent is named {@code parent}. */
        Observation.Context only(String name, String parent) {
            List<Observation.Context> found = started.stream().filter(context -> name.equals(context.getName())
                    && context.getParentObservation() != null
                    && parent.equals(context.getParentObservation().getContextView().getName())).toList();
            assertThat(found).as("observations %s under %s, among %s", name, parent, started.stream()
                    .map(context -> context.getName() + " under " + (context.getParentObservation() == null ? "nothing"
                            : context.getParentObservation().getContextView().getName())).toList()).hasSize(1);
            return found.get(0);
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class TracedApplication {
        @Bean
        SimpleTracer tracer() {
            return new SimpleTracer();
        }

        @Bean
        DefaultTracingObservationHandler tracingHandler(SimpleTracer tracer) {
            return new DefaultTracingObservationHandler(tracer);
        }

        @Bean
        Lifecycles lifecycles() {
            return new Lifecycles();
        }

        @Bean
        Reports reports() {
            return new Reports();
        }
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, DistributedLockAutoConfiguration.class,
                    DistributedLockMetricsAutoConfiguration.class, DistributedLockObservationAutoConfiguration.class))
            .withConfiguration(BootLine.METRICS)
            .withConfiguration(BootLine.OBSERVATION)
            .withUserConfiguration(TracedApplication.class)
            .withPropertyValues("dlock.store=in-memory");

    @Test
    void aRequestShowsWhereItWaitedForTheLockAndHowLongItHeldIt() {
        runner.run(context -> {
            ObservationRegistry registry = context.getBean(ObservationRegistry.class);
            Reports reports = context.getBean(Reports.class);
            Observation.createNotStarted("http.request", registry).observe(() -> reports.export("order-7"));

            List<SimpleSpan> spans = List.copyOf(context.getBean(SimpleTracer.class).getSpans());
            SimpleSpan request = span(spans, "http.request");
            SimpleSpan acquire = span(spans, "dlock acquire report");
            SimpleSpan hold = span(spans, "dlock hold report");
            assertThat(List.of(acquire, hold)).allSatisfy(span -> {
                assertThat(span.getParentId()).as("parent of " + span.getName()).isEqualTo(request.getSpanId());
                assertThat(span.getTraceId()).isEqualTo(request.getTraceId());
                assertThat(span.getTags()).containsEntry("lock.name", "report").containsEntry("lock.key", "report:order-7");
            });
            assertThat(acquire.getTags()).containsEntry("result", "acquired").containsKey("fencing.token");
            assertThat(hold.getStartTimestamp()).isAfterOrEqualTo(acquire.getStartTimestamp());
        });
    }

    @Test
    void spansKeepTheKeyOutWhenToldAndMetersNeverCarryIt() {
        runner.withPropertyValues("dlock.observation.key-in-spans=false").run(context -> {
            context.getBean(Reports.class).export("customer-42");
            SimpleSpan acquire = span(List.copyOf(context.getBean(SimpleTracer.class).getSpans()), "dlock acquire report");
            assertThat(acquire.getTags()).containsEntry("lock.name", "report").doesNotContainKey("lock.key");
            assertThat(context.getBean(MeterRegistry.class).getMeters()).allSatisfy(meter ->
                    assertThat(meter.getId().getTags()).noneMatch(tag -> tag.getValue().contains("customer-42")));
        });
    }

    /**
     * On a store that issues the fencing token only when the holder asks (Redis exclusive locks; here the in-memory
     * store built to do the same), the spans leave the token out rather than tag a meaningless 0, and observing never
     * asks for one.
     */
    @Test
    void spansLeaveOutATokenTheStoreHasNotIssued() {
        runner.withBean(LockBackend.class, () -> InMemoryLockBackend.builder().fencingTokensOnRequest(true).build()).run(context -> {
            context.getBean(Reports.class).export("order-8");
            List<SimpleSpan> spans = List.copyOf(context.getBean(SimpleTracer.class).getSpans());
            assertThat(List.of(span(spans, "dlock acquire report"), span(spans, "dlock hold report")))
                    .allSatisfy(observed -> assertThat(observed.getTags()).doesNotContainKey("fencing.token")
                            .containsEntry("lock.name", "report"));
        });
    }

    /**
     * An acquisition that blocks no caller ({@code acquireAsync}, as a {@code Mono} method uses) starts on the caller's
     * thread and is taken on a dlock thread: its acquire observation still ends there, both observations hang under the
     * caller's, and the hold ends when the handle is closed on yet another thread.
     */
    @Test
    void anAsynchronousAcquisitionEndsItsObservationsUnderTheCallersObservation() {
        runner.run(context -> {
            ObservationRegistry registry = context.getBean(ObservationRegistry.class);
            Lifecycles observed = context.getBean(Lifecycles.class);
            LockManager locks = context.getBean(LockManager.class);
            Observation caller = Observation.start("caller", registry);
            LockHandle handle;
            try (Observation.Scope scope = caller.openScope()) {
                handle = locks.acquireAsync(LockRequest.builder("async-1").name("report").build()).get(10, TimeUnit.SECONDS);
            }

            Observation.Context acquire = observed.only("dlock.lock.acquire", "caller");
            assertThat(observed.stopped).as("the acquire observation ended with the acquisition").contains(acquire);
            assertThat(acquire.getLowCardinalityKeyValue("result").getValue()).isEqualTo("acquired");
            Observation.Context hold = observed.only("dlock.lock.hold", "caller");
            assertThat(observed.stopped).as("the hold lasts until the release").doesNotContain(hold);

            CompletableFuture.runAsync(handle::close).get(10, TimeUnit.SECONDS);
            assertThat(observed.stopped).as("the hold ended with the release, on another thread").contains(hold);
            assertThat(registry.getCurrentObservation()).as("nothing left current on the caller's thread").isNull();
            caller.stop();
        });
    }

    /** Two readers of one key hold at once: each hold observation is its own, ended by its own release. */
    @Test
    void twoReadersOfOneKeyEachEndTheirOwnHold() {
        runner.run(context -> {
            ObservationRegistry registry = context.getBean(ObservationRegistry.class);
            Lifecycles observed = context.getBean(Lifecycles.class);
            LockManager locks = context.getBean(LockManager.class);
            LockRequest read = LockRequest.builder("doc-1").name("doc").kind(LockKind.READ).build();
            LockHandle first = observe("reader-1", registry, () -> locks.acquire(read));
            // Another thread: the same thread would re-enter the first reader's lease.
            LockHandle second = CompletableFuture.supplyAsync(() -> observe("reader-2", registry, () -> locks.acquire(read)))
                    .get(10, TimeUnit.SECONDS);
            Observation.Context firstHold = observed.only("dlock.lock.hold", "reader-1");
            Observation.Context secondHold = observed.only("dlock.lock.hold", "reader-2");
            assertThat(observed.stopped).as("both readers hold").doesNotContain(firstHold, secondHold);

            first.close();
            assertThat(observed.stopped).as("the first reader's release ends its own hold only").contains(firstHold)
                    .doesNotContain(secondHold);
            second.close();
            assertThat(observed.stopped).contains(secondHold);
        });
    }

    @Test
    void metersAndSpansCountTheSameAcquisitionsAndTimeouts() {
        runner.run(context -> {
            Reports reports = context.getBean(Reports.class);
            ExecutorService holder = Executors.newSingleThreadExecutor();
            try {
                Future<?> holding = holder.submit(() -> {
                    reports.hold("busy");
                    return null;
                });
                reports.awaitEntered();
                for (int i = 0; i < 3; i++) {
                    reports.export("busy");
                    reports.export("free-" + i);
                }
                reports.letGo();
                holding.get(10, TimeUnit.SECONDS);
            } finally {
                holder.shutdownNow();
            }
            List<SimpleSpan> spans = List.copyOf(context.getBean(SimpleTracer.class).getSpans());
            long acquiredSpans = spans.stream().filter(s -> s.getName().equals("dlock acquire report")
                    && "acquired".equals(s.getTags().get("result"))).count();
            long timeoutSpans = spans.stream().filter(s -> s.getName().equals("dlock acquire report")
                    && "timeout".equals(s.getTags().get("result"))).count();
            long holdSpans = spans.stream().filter(s -> s.getName().equals("dlock hold report")).count();
            MeterRegistry meters = context.getBean(MeterRegistry.class);
            assertThat(acquiredSpans).isEqualTo(4).isEqualTo(holdSpans)
                    .isEqualTo(meters.get(LockMetrics.ACQUIRE).tag(LockMetrics.TAG_LOCK_NAME, "report")
                            .tag(LockMetrics.TAG_RESULT, LockMetrics.RESULT_ACQUIRED).timer().count());
            assertThat(timeoutSpans).isEqualTo(3).isEqualTo(meters.get(LockMetrics.ACQUIRE).tag(LockMetrics.TAG_LOCK_NAME, "report")
                    .tag(LockMetrics.TAG_RESULT, "timeout").timer().count());
        });
    }

    /** Runs {@code work} with an observation named {@code name} current on this thread. */
    private static <T> T observe(String name, ObservationRegistry registry, Supplier<T> work) {
        return Observation.createNotStarted(name, registry).observe(work);
    }

    private static SimpleSpan span(List<SimpleSpan> spans, String name) {
        return spans.stream().filter(s -> name.equals(s.getName())).findFirst()
                .orElseThrow(() -> new AssertionError("no span " + name + " among " + spans.stream().map(SimpleSpan::getName).toList()));
    }
}
