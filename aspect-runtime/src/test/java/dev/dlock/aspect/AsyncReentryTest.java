package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.core.LockManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A thread that holds a key keeps re-entering it after handing an async locked call on the same
 * key its own hold, and an async call re-enters during its synchronous part.
 */
class AsyncReentryTest {

    /** Methods on one lock name, so that they share a key for the same id. */
    public static class Reentry {

        /** Runs {@code body} while holding the key. */
        @DistributedLock(name = "reentry", key = "#id")
        public <T> T holding(String id, Supplier<T> body) {
            return body.get();
        }

        /** Does not wait: only re-entry (or a free key) lets it run. */
        @DistributedLock(name = "reentry", key = "#id", waitTime = "0")
        public String tryOnce(String id) {
            return "re-entered";
        }

        /** Holds the key until {@code work} completes. */
        @DistributedLock(name = "reentry", key = "#id")
        public CompletableFuture<String> async(String id, CompletableFuture<String> work) {
            return work;
        }

        /** Calls {@code body} synchronously, in the method itself, while subscribing. */
        @DistributedLock(name = "reentry", key = "#id")
        public Mono<String> mono(String id, Supplier<String> body) {
            return Mono.just(body.get());
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Services {
        @Bean
        Reentry reentry() {
            return new Reentry();
        }
    }

    private static AnnotationConfigApplicationContext context;
    private static Reentry service;
    private static LockManager otherJvm;
    /** The key of the Reactor hook one test installs. */
    private static final String AWAIT_ACQUISITION = "await-acquisition";
    private String id;

    @BeforeAll
    static void start() {
        context = TestContexts.start(Services.class);
        service = context.getBean(Reentry.class);
        otherJvm = TestContexts.otherJvm();
    }

    @AfterAll
    static void stop() {
        context.close();
        otherJvm.close();
    }

    @BeforeEach
    void freshKey() {
        id = UUID.randomUUID().toString();
    }

    private boolean heldInStore() {
        Optional<LockHandle> handle = otherJvm.tryAcquire("reentry:" + id);
        handle.ifPresent(LockHandle::close);
        return handle.isEmpty();
    }

    @Test
    void anAsyncCallInsideAHeldKeyLeavesTheOuterThreadItsReentry() throws Exception {
        CompletableFuture<String> work = new CompletableFuture<>();
        AtomicReference<CompletableFuture<String>> pending = new AtomicReference<>();

        String afterTheAsyncCall = service.holding(id, () -> {
            pending.set(service.async(id, work));
            return service.tryOnce(id);
        });

        assertThat(afterTheAsyncCall).as("the outer holder re-enters after the async call on its key").isEqualTo("re-entered");
        assertThat(heldInStore()).as("the pending async call still holds the key after the outer one returned").isTrue();
        work.complete("done");
        assertThat(pending.get().get(5, TimeUnit.SECONDS)).isEqualTo("done");
        assertThat(heldInStore()).as("released once the async work completed").isFalse();
    }

    /** Once the outer holder returned, the key belongs to the pending async call alone: the thread does not re-enter it. */
    @Test
    void theOuterThreadNoLongerReentersAKeyOnlyAPendingAsyncCallHolds() throws Exception {
        CompletableFuture<String> work = new CompletableFuture<>();
        AtomicReference<CompletableFuture<String>> pending = new AtomicReference<>();
        service.holding(id, () -> {
            pending.set(service.async(id, work));
            return "outer done";
        });

        assertThatThrownBy(() -> service.tryOnce(id)).as("the thread's call while only the async call holds the key")
                .isInstanceOf(LockNotAcquiredException.class);
        work.complete("done");
        assertThat(pending.get().get(5, TimeUnit.SECONDS)).isEqualTo("done");
        assertThat(service.tryOnce(id)).isEqualTo("re-entered");
    }

    @Test
    void aMonoBodyReentersItsOwnKey() {
        String inside = service.mono(id, () -> service.tryOnce(id)).block(Duration.ofSeconds(5));

        assertThat(inside).as("a locked call made by the Mono method's body re-enters its key").isEqualTo("re-entered");
        assertThat(heldInStore()).as("released when the Mono completed").isFalse();
    }

    /**
     * The acquisition completes on a dlock thread before Reactor subscribes to it, so the method runs on the
     * subscriber's thread: that thread, not the dlock thread, must re-enter. A Reactor assembly hook waits for the
     * acquisition before the aspect's subscription to it goes on.
     */
    @Test
    void aMonoBodyReentersItsKeyWhenTheAcquisitionCompletedBeforeTheSubscription() {
        AtomicInteger acquisitionsAwaited = new AtomicInteger();
        Hooks.onEachOperator(AWAIT_ACQUISITION, publisher -> {
            // Mono.fromFuture's publisher: the aspect's view of the acquisition.
            if (publisher instanceof Mono<?> mono && publisher.getClass().getSimpleName().equals("MonoCompletionStage")) {
                acquisitionsAwaited.incrementAndGet();
                mono.block(Duration.ofSeconds(5));
            }
            return publisher;
        });
        String inside;
        try {
            inside = service.mono(id, () -> service.tryOnce(id)).block(Duration.ofSeconds(5));
        } finally {
            Hooks.resetOnEachOperator(AWAIT_ACQUISITION);
        }

        assertThat(acquisitionsAwaited).as("acquisitions completed before the subscription").hasValue(1);
        assertThat(inside).as("a locked call made by the Mono method's body re-enters its key").isEqualTo("re-entered");
        assertThat(heldInStore()).as("released when the Mono completed").isFalse();
    }

    /**
     * The Mono method's body does not always run on a dlock thread: when the acquisition completed before the
     * subscription it runs on the subscriber's thread (here the test's own, which blocks). What holds either way: the
     * lock is bound to the thread that runs the body, as {@link LockContext} shows.
     */
    @Test
    void aMonoBodyRunOnTheSubscribersThreadHasItsLockBound() {
        Hooks.onEachOperator(AWAIT_ACQUISITION, publisher -> {
            if (publisher instanceof Mono<?> mono && publisher.getClass().getSimpleName().equals("MonoCompletionStage")) {
                mono.block(Duration.ofSeconds(5));
            }
            return publisher;
        });
        String subscriber = Thread.currentThread().getName();
        String inside;
        try {
            inside = service.mono(id, () -> Thread.currentThread().getName() + " " + LockContext.current().lockName() + " "
                    + LockContext.current().key() + " " + LockContext.current().isHeld()).block(Duration.ofSeconds(5));
        } finally {
            Hooks.resetOnEachOperator(AWAIT_ACQUISITION);
        }

        assertThat(inside).as("the body's thread and its lock context").isEqualTo(subscriber + " reentry reentry:" + id + " true");
    }
}
