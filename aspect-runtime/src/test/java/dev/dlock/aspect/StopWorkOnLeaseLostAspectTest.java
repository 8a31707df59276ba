package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.WhenLeaseLost;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code whenLeaseLost = STOP}: a locked method whose lease is lost while it runs (here another JVM's forced release,
 * which the in-memory store tells at once) is stopped — a blocking method's thread interrupted, a future cancelled, a
 * {@code Mono} or {@code Flux} subscription disposed with {@code LockLostException} — and the default follows
 * {@code dlock.stop-work-on-lease-lost}.
 */
class StopWorkOnLeaseLostAspectTest {

    /** What a worker's call saw; fresh for each test. */
    static final class State {
        final CountDownLatch entered = new CountDownLatch(1);
        final BlockingQueue<String> given = new ArrayBlockingQueue<>(1);
        final AtomicBoolean cancelled = new AtomicBoolean();
        volatile String seen;
        volatile CompletableFuture<String> pending;
    }

    /** Methods that block until stopped, each recording what it saw in the current {@link State}. */
    static class Worker {
        private volatile State state = new State();

        /** A fresh state (through the proxy: the proxy's own fields are not the bean's). */
        public State reset() {
            state = new State();
            return state;
        }

        @DistributedLock(name = "stop", key = "#id", whenLeaseLost = WhenLeaseLost.STOP)
        public String blocking(String id) {
            return block();
        }

        @DistributedLock(name = "stop", key = "#id", whenLeaseLost = WhenLeaseLost.CONTINUE)
        public String continuing(String id) {
            return block();
        }

        @DistributedLock(name = "stop", key = "#id")
        public String byDefault(String id) {
            return block();
        }

        @DistributedLock(name = "stop", key = "#id", whenLeaseLost = WhenLeaseLost.STOP)
        public CompletableFuture<String> future(String id) {
            State current = state;
            current.pending = new CompletableFuture<>();
            current.entered.countDown();
            return current.pending;
        }

        @DistributedLock(name = "stop", key = "#id", whenLeaseLost = WhenLeaseLost.STOP)
        public Mono<String> mono(String id) {
            State current = state;
            return Mono.<String>never().doOnSubscribe(s -> current.entered.countDown()).doOnCancel(() -> current.cancelled.set(true));
        }

        @DistributedLock(name = "stop", key = "#id", whenLeaseLost = WhenLeaseLost.STOP)
        public Flux<String> flux(String id) {
            State current = state;
            return Flux.<String>never().doOnSubscribe(s -> current.entered.countDown()).doOnCancel(() -> current.cancelled.set(true));
        }

        private String block() {
            State current = state;
            current.entered.countDown();
            try {
                String taken = current.given.poll(5, TimeUnit.SECONDS);
                current.seen = taken == null ? "ran to its end" : taken;
            } catch (InterruptedException e) {
                current.seen = "interrupted";
            }
            return current.seen;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Services {
        @Bean
        Worker worker() {
            return new Worker();
        }
    }

    private static AnnotationConfigApplicationContext context;
    private static AnnotationConfigApplicationContext stoppingByDefault;
    private static LockManager otherJvm;
    private String id;

    @BeforeAll
    static void start() {
        context = TestContexts.start(Services.class);
        stoppingByDefault = TestContexts.start(ctx -> {
            ctx.getEnvironment().getPropertySources().addFirst(new MapPropertySource("stop",
                    Map.of(DistributedLockConfiguration.STOP_WORK_ON_LEASE_LOST, "true")));
            ctx.register(TestContexts.DefaultLocking.class);
        }, Services.class);
        otherJvm = TestContexts.otherJvm();
    }

    @AfterAll
    static void stop() {
        context.close();
        stoppingByDefault.close();
        otherJvm.close();
    }

    @BeforeEach
    void freshKey() {
        id = UUID.randomUUID().toString();
    }

    /** Calls {@code call} on a thread of its own; the future holds its result, or what it threw, and whether the thread was left interrupted. */
    private static CompletableFuture<String> onItsOwnThread(java.util.function.Supplier<String> call) {
        CompletableFuture<String> outcome = new CompletableFuture<>();
        Thread caller = new Thread(() -> {
            String result;
            try {
                result = "returned " + call.get();
            } catch (RuntimeException e) {
                result = "threw " + e.getClass().getSimpleName();
            }
            outcome.complete(result + (Thread.currentThread().isInterrupted() ? ", thread left interrupted" : ""));
        }, "caller");
        caller.setDaemon(true);
        caller.start();
        return outcome;
    }

    private void forceRelease(State state) throws InterruptedException {
        assertThat(state.entered.await(10, TimeUnit.SECONDS)).as("the method runs").isTrue();
        assertThat(otherJvm.admin().forceRelease("stop", "stop:" + id)).as("the method's lease, removed").hasSize(1);
    }

    @Test
    void aBlockingMethodIsInterruptedAndTheCallerGetsTheLoss() throws Exception {
        Worker worker = context.getBean(Worker.class);
        State state = worker.reset();
        CompletableFuture<String> outcome = onItsOwnThread(() -> worker.blocking(id));
        forceRelease(state);

        assertThat(outcome.get(10, TimeUnit.SECONDS)).isEqualTo("threw LockLostException");
        assertThat(state.seen).isEqualTo("interrupted");
    }

    @Test
    void continueLetsTheMethodRunOnEvenWhereTheDefaultStops() throws Exception {
        Worker worker = stoppingByDefault.getBean(Worker.class);
        State state = worker.reset();
        CompletableFuture<String> outcome = onItsOwnThread(() -> worker.continuing(id));
        forceRelease(state);
        state.given.put("given by the test");

        assertThat(outcome.get(10, TimeUnit.SECONDS)).isEqualTo("threw LockLostException");
        assertThat(state.seen).as("not interrupted: it took what the test gave").isEqualTo("given by the test");
    }

    @Test
    void theDefaultFollowsTheProperty() throws Exception {
        Worker worker = stoppingByDefault.getBean(Worker.class);
        State state = worker.reset();
        CompletableFuture<String> outcome = onItsOwnThread(() -> worker.byDefault(id));
        forceRelease(state);

        assertThat(outcome.get(10, TimeUnit.SECONDS)).isEqualTo("threw LockLostException");
        assertThat(state.seen).isEqualTo("interrupted");
    }

    @Test
    void withoutThePropertyTheDefaultRunsOn() throws Exception {
        Worker worker = context.getBean(Worker.class);
        State state = worker.reset();
        CompletableFuture<String> outcome = onItsOwnThread(() -> worker.byDefault(id));
        forceRelease(state);
        state.given.put("given by the test");

        assertThat(outcome.get(10, TimeUnit.SECONDS)).isEqualTo("threw LockLostException");
        assertThat(state.seen).isEqualTo("given by the test");
    }

    @Test
    void aFutureIsCancelledAndTheCallersFutureFailsWithTheLoss() throws Exception {
        Worker worker = context.getBean(Worker.class);
        State state = worker.reset();
        CompletableFuture<String> result = worker.future(id);
        forceRelease(state);

        assertThatThrownBy(() -> result.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(LockLostException.class);
        assertThat(state.pending).as("the method's own future").isCancelled();
    }

    @Test
    void aMonoIsDisposedAndItsSubscriberGetsTheLoss() throws Exception {
        Worker worker = context.getBean(Worker.class);
        State state = worker.reset();
        CompletableFuture<String> result = worker.mono(id).toFuture();
        forceRelease(state);

        assertThatThrownBy(() -> result.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(LockLostException.class).hasMessageContaining("whenLeaseLost = STOP");
        assertThat(state.cancelled).as("the method's publisher was cancelled").isTrue();
        assertThat(otherJvm.tryAcquire("stop:" + id)).as("the key, free").isPresent().get().satisfies(h -> h.close());
    }

    @Test
    void aFluxIsDisposedAndItsSubscriberGetsTheLoss() throws Exception {
        Worker worker = context.getBean(Worker.class);
        State state = worker.reset();
        CompletableFuture<java.util.List<String>> result = worker.flux(id).collectList().toFuture();
        forceRelease(state);

        assertThatThrownBy(() -> result.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(LockLostException.class);
        assertThat(state.cancelled).isTrue();
    }
}
