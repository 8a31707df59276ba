package dev.dlock.aspect;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockNotAcquiredException;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.util.List;

/**
 * Locks for methods returning {@code Mono} or {@code Flux}: the lock is acquired when the result is
 * subscribed, held while it emits, and released when it completes, fails or is cancelled. Loaded
 * only when Reactor is on the classpath.
 *
 * <p>Acquiring may wait, blocking the subscribing thread up to the wait time: subscribe on a
 * scheduler that allows blocking (for example {@code Schedulers.boundedElastic()}) when the wait
 * time is not zero.
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

    /** Runs on subscribe: acquires, calls the method, and ties the release to the publisher's end. */
    private static Publisher<?> subscribeLocked(LockAspectSupport support, LockAspectSupport.Call call, boolean mono) {
        List<LockHandle> held;
        try {
            held = support.acquire(call);
        } catch (LockNotAcquiredException e) {
            return failureResult(support, call, e, mono);
        } catch (RuntimeException e) {
            return mono ? Mono.error(e) : Flux.error(e);
        }
        held.forEach(LockHandle::detachFromThread);
        Object result;
        try {
            result = support.runLocked(call, held);
        } catch (Throwable methodFailure) {
            return mono ? Mono.error(methodFailure) : Flux.error(methodFailure);
        }
        if (result == null) {
            RuntimeException problem = support.releaseLogged(call.operation(), held, null);
            return problem != null ? (mono ? Mono.error(problem) : Flux.error(problem)) : (mono ? Mono.empty() : Flux.empty());
        }
        if (mono) {
            return Mono.using(() -> held, locks -> (Mono<?>) result, locks -> release(support, call, locks), true);
        }
        return Flux.using(() -> held, locks -> (Flux<?>) result, locks -> release(support, call, locks), true);
    }

    /** Releases on terminate or cancel; a lost lease becomes the publisher's error (eager cleanup). */
    private static void release(LockAspectSupport support, LockAspectSupport.Call call, List<LockHandle> held) {
        RuntimeException problem = support.releaseLogged(call.operation(), held, null);
        if (problem != null) {
            throw problem;
        }
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
            return mono ? Mono.error(e) : Flux.error(e);
        }
    }
}
