package dev.dlock.aspect;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockNotAcquiredException;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Locks for methods returning {@code Mono} or {@code Flux}: the lock is acquired when the result is
 * subscribed, held while it emits, and released when it completes, fails or is cancelled. The
 * completion reaches the subscriber only after the release, and a release problem (a lost lease, a
 * release whose outcome is unknown) becomes the publisher's error, or is added as suppressed to its
 * own error. Loaded only when Reactor is on the classpath.
 *
 * <p>Acquiring blocks no thread of the subscriber's: the lock is awaited by
 * {@link dev.dlock.core.LockManager#acquireAsync}, and the method is called — and its publisher
 * subscribed — on the thread that sees the acquisition complete (the dlock thread that completed it, or
 * the subscriber's when it completed first), with the lock bound to that thread while the method runs so
 * that locked calls the method makes on the same key re-enter.
 */
final class ReactorLocks {

    private ReactorLocks() {
    }

    static LockOperation.ResultKind resultKind(Class<?> returnType) {
        if (Mono.class.isAssignableFrom(returnType)) {
            return LockOperation.ResultKind.MONO;
        }
        if (Flux.class.isAssignableFrom(returnType)) {
            return LockOperation.ResultKind.FLUX;
        }
        return null;
    }

    static LockOperation.EmptyResult empty(LockOperation.ResultKind kind) {
        return kind == LockOperation.ResultKind.MONO ? Mono::empty : Flux::empty;
    }

    static Object invoke(LockAspectSupport support, LockAspectSupport.Call call) {
        if (call.operation().resultKind() == LockOperation.ResultKind.MONO) {
            return Mono.defer(() -> Mono.from(subscribeLocked(support, call, true)));
        }
        return Flux.defer(() -> Flux.from(subscribeLocked(support, call, false)));
    }

    /** Runs on subscribe: starts acquiring, and once acquired calls the method and ties the release to the publisher's end. */
    private static Publisher<?> subscribeLocked(LockAspectSupport support, LockAspectSupport.Call call, boolean mono) {
        CompletableFuture<AsyncKeyAcquisition.HeldLocks> acquiring;
        try {
            acquiring = support.acquireAsync(call);
        } catch (RuntimeException e) {
            return error(e, mono);
        }
        // Cancelling the subscription cancels the acquisition (a lock it takes afterwards is released at
        // once); locks that arrive just as the subscription goes are dropped by Reactor, and released here.
        Mono<Publisher<?>> locked = Mono.fromFuture(acquiring, false)
                .<Publisher<?>>map(held -> runAndRelease(support, call, held.handles(), mono))
                .doOnDiscard(AsyncKeyAcquisition.HeldLocks.class,
                        dropped -> support.logUnreported(call.operation(), LockAspectSupport.releaseAll(dropped.handles())))
                .onErrorResume(LockNotAcquiredException.class, e -> Mono.<Publisher<?>>just(failureResult(support, call, e, mono)));
        return mono ? locked.flatMap(Mono::from) : locked.flatMapMany(Flux::from);
    }

    /** Calls the method holding {@code held}, and releases when its publisher ends. */
    private static Publisher<?> runAndRelease(LockAspectSupport support, LockAspectSupport.Call call, List<LockHandle> held,
                                              boolean mono) {
        // This thread runs the method, so its locked calls on the same key must re-enter here; it may be the dlock
        // thread that completed the acquisition or, when the acquisition finished before the subscription, the
        // subscriber's own.
        held.forEach(LockHandle::attachToCurrentThread);
        Object result;
        try {
            result = support.runLocked(call, held);
        } catch (Throwable methodFailure) {
            return error(methodFailure, mono);
        }
        if (result == null) {
            RuntimeException problem = LockAspectSupport.releaseAll(held);
            return problem != null ? error(problem, mono) : (mono ? Mono.empty() : Flux.empty());
        }
        LockAspectSupport.detachFromThread(held);
        Mono<List<LockHandle>> locks = Mono.just(held);
        if (mono) {
            return Mono.usingWhen(locks, ignored -> stoppedOnLoss(support, call, held, (Mono<?>) result),
                    ReactorLocks::releaseOnComplete, ReactorLocks::releaseOnError, released -> releaseOnCancel(support, call, released));
        }
        return Flux.usingWhen(locks, ignored -> stoppedOnLoss(support, call, held, (Flux<?>) result),
                ReactorLocks::releaseOnComplete, ReactorLocks::releaseOnError, released -> releaseOnCancel(support, call, released));
    }

    /**
     * The method's publisher, cancelled when the lease is lost if the operation stops its work then: the subscriber gets
     * {@code LockLostException} at once, and the release (which reports the loss too) runs as for any error. The
     * reaction is armed on subscription, so a publisher never subscribed stops nothing.
     */
    private static <T> Mono<T> stoppedOnLoss(LockAspectSupport support, LockAspectSupport.Call call, List<LockHandle> held,
                                             Mono<T> result) {
        if (!support.stopsWork(call.operation())) {
            return result;
        }
        return Mono.firstWithSignal(result, lossSignal(support, call, held));
    }

    private static <T> Flux<T> stoppedOnLoss(LockAspectSupport support, LockAspectSupport.Call call, List<LockHandle> held,
                                             Flux<T> result) {
        if (!support.stopsWork(call.operation())) {
            return result;
        }
        return result.mergeWith(lossSignal(support, call, held));
    }

    /** Fails with the lost lease once a handle's loss reaction runs; never emits a value. */
    private static <T> Mono<T> lossSignal(LockAspectSupport support, LockAspectSupport.Call call, List<LockHandle> held) {
        return Mono.create(sink -> support.stopOnLeaseLost(call.operation(), held,
                () -> sink.error(LockAspectSupport.stoppedForLoss(call.operation(), held))));
    }

    /**
     * Releases before the completion reaches the subscriber; a release problem becomes the
     * publisher's error instead. Thrown rather than returned as {@code Mono.error}, which
     * {@code usingWhen} would wrap in an exception of its own.
     */
    private static Mono<Void> releaseOnComplete(List<LockHandle> held) {
        RuntimeException problem = LockAspectSupport.releaseAll(held);
        if (problem != null) {
            throw problem;
        }
        return Mono.empty();
    }

    /** Releases after the publisher failed: its error stays, a release problem is added to it as suppressed. */
    private static Mono<Void> releaseOnError(List<LockHandle> held, Throwable failure) {
        LockAspectSupport.releaseAfterFailure(held, failure);
        return Mono.empty();
    }

    /** Releases after the subscriber cancelled: nobody is left to receive a release problem, so it is logged. */
    private static Mono<Void> releaseOnCancel(LockAspectSupport support, LockAspectSupport.Call call, List<LockHandle> held) {
        support.logUnreported(call.operation(), LockAspectSupport.releaseAll(held));
        return Mono.empty();
    }

    private static <T> Publisher<T> error(Throwable failure, boolean mono) {
        return mono ? Mono.error(failure) : Flux.error(failure);
    }

    private static Publisher<?> failureResult(LockAspectSupport support, LockAspectSupport.Call call,
                                                                  LockNotAcquiredException failure, boolean mono) {
        try {
            Object value = support.onFailure(call, failure);
            if (value == null) {
                return mono ? Mono.empty() : Flux.empty();
            }
            return (Publisher<?>) value;
        } catch (Throwable e) {
            return error(e, mono);
        }
    }
}
