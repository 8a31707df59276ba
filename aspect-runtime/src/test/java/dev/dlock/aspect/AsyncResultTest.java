package dev.dlock.aspect;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** CompletionStage, Mono and Flux results: the lock belongs to the pending operation. */
class AsyncResultTest {

    @Configuration(proxyBeanMethods = false)
    static class Services {
        @Bean
        LockedService lockedService(LockManager lockManager) {
            return new LockedService(lockManager);
        }

        @Bean
        SupportBeans.KeyBean keyBean() {
            return new SupportBeans.KeyBean();
        }

        @Bean
        SupportBeans.SaleState saleState() {
            return new SupportBeans.SaleState();
        }
    }

    private static AnnotationConfigApplicationContext context;
    private static LockedService service;
    private static LockManager lockManager;
    private static LockManager otherJvm;
    private String id;

    @BeforeAll
    static void start() {
        context = TestContexts.start(Services.class);
        service = context.getBean(LockedService.class);
        lockManager = context.getBean(LockManager.class);
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

    private void awaitHeld(String key) {
        awaitHeldInStore(key, true);
    }

    /** Waits up to 5 s until {@code key} is held (or free) in the store: acquisition and cancellation finish on dlock's threads. */
    private void awaitHeldInStore(String key, boolean held) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (heldInStore(key) != held) {
            assertThat(System.nanoTime() - deadline).as("%s %s within 5 s", key, held ? "held" : "released").isNegative();
            Thread.onSpinWait();
        }
    }

    private boolean heldInStore(String key) {
        Optional<LockHandle> handle = otherJvm.tryAcquire(key);
        handle.ifPresent(LockHandle::close);
        return handle.isEmpty();
    }

    @Test
    void theLockIsHeldUntilTheFutureCompletesNotUntilTheMethodReturns() throws Exception {
        String key = "LockedService.async:" + id;
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> result = service.async(id, work);
        assertThat(heldInStore(key)).as("held after the method returned").isTrue();
        assertThat(lockManager.tryAcquire(key)).as("the returning thread does not re-enter the pending operation's lock").isEmpty();
        work.complete("done");
        assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("done");
        assertThat(heldInStore(key)).as("released by the time the caller sees completion").isFalse();
    }

    @Test
    void aFailedFutureReleasesAndKeepsItsException() {
        String key = "LockedService.async:" + id;
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> result = service.async(id, work);
        assertThat(heldInStore(key)).isTrue();
        work.completeExceptionally(new IOException("disk"));
        assertThatThrownBy(() -> result.get(5, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseExactlyInstanceOf(IOException.class);
        assertThat(heldInStore(key)).isFalse();
    }

    @Test
    void cancellingEitherFutureReleases() {
        String key = "LockedService.async:" + id;
        CompletableFuture<String> work = new CompletableFuture<>();
        CompletableFuture<String> result = service.async(id, work);
        work.cancel(false);
        assertThat(result).isCompletedExceptionally();
        assertThat(heldInStore(key)).isFalse();

        CompletableFuture<String> work2 = new CompletableFuture<>();
        CompletableFuture<String> result2 = service.async(id, work2);
        assertThat(heldInStore(key)).isTrue();
        result2.cancel(false);
        assertThat(work2).isCancelled();
        assertThat(heldInStore(key)).isFalse();
    }

    @Test
    void aSynchronousThrowReleasesAtOnce() {
        assertThatThrownBy(() -> service.asyncThrows(id)).isInstanceOf(IllegalStateException.class);
        assertThat(heldInStore("LockedService.asyncThrows:" + id)).isFalse();
    }

    @Test
    void skipCompletesWithTheEmptyValueOfTheFuturesType() throws Exception {
        try (LockHandle ignored = otherJvm.acquire("LockedService.asyncSkip:" + id, java.time.Duration.ofSeconds(1))) {
            assertThat(service.asyncSkip(id).get(1, TimeUnit.SECONDS)).isEmpty();
        }
        assertThat(service.asyncSkip(id).get(1, TimeUnit.SECONDS)).contains("ran");
    }

    @Test
    void monoAcquiresOnSubscribeAndReleasesOnTerminate() throws Exception {
        String key = "LockedService.mono:" + id;
        Sinks.One<String> sink = Sinks.one();
        Mono<String> mono = service.mono(id, sink.asMono());
        assertThat(heldInStore(key)).as("nothing is locked before subscribe").isFalse();
        CompletableFuture<String> subscribed = mono.toFuture();
        // Acquired without blocking the subscriber: taken a moment after subscribe returns.
        awaitHeld(key);
        sink.tryEmitValue("value");
        assertThat(subscribed.get(5, TimeUnit.SECONDS)).isEqualTo("value");
        assertThat(heldInStore(key)).isFalse();
    }

    @Test
    void monoCancellationReleases() {
        String key = "LockedService.mono:" + id;
        Disposable subscription = service.mono(id, Mono.never()).subscribe();
        awaitHeld(key);
        subscription.dispose();
        // A cancellation that overtakes the acquisition's completion is released on the acquiring thread, a moment later.
        awaitHeldInStore(key, false);
    }

    /**
     * Subscribers that go away at any moment of the acquisition — while it waits, as the store grants
     * the key, as the grant reaches Reactor — leave nothing locked. Before cancellation reached the
     * acquisition, a grant that arrived after the cancel kept its key, renewed by the watchdog, forever.
     */
    @Test
    void subscribersCancellingAtAnyMomentOfTheAcquisitionLeaveNothingLocked() {
        String key = "LockedService.mono:" + id;
        for (int i = 0; i < 200; i++) {
            Disposable subscription = service.mono(id, Mono.never()).subscribe();
            for (int spin = 0; spin < (i % 20) * 50; spin++) {
                Thread.onSpinWait();
            }
            subscription.dispose();
        }
        awaitHeldInStore(key, false);
        assertThat(service.mono(id, Mono.just("after")).block(Duration.ofSeconds(5))).isEqualTo("after");
    }

    @Test
    void fluxHoldsTheLockUntilComplete() {
        String key = "LockedService.flux:" + id;
        Sinks.Many<String> sink = Sinks.many().unicast().onBackpressureBuffer();
        CompletableFuture<List<String>> all = service.flux(id, sink.asFlux()).collectList().toFuture();
        sink.tryEmitNext("a");
        awaitHeld(key);
        sink.tryEmitNext("b");
        sink.tryEmitComplete();
        assertThat(all.join()).containsExactly("a", "b");
        assertThat(heldInStore(key)).isFalse();
        assertThat(service.flux(id, Flux.just("x")).collectList().block()).containsExactly("x");
    }
}
