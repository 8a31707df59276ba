package dev.dlock.aspect;

import dev.dlock.annotation.OnFailure;
import dev.dlock.annotation.WhenLeaseLost;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKeyException;
import dev.dlock.core.LockKeys;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.core.LockRequest;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.expression.EvaluationContext;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.util.ClassUtils;
import org.springframework.util.ObjectUtils;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;

/**
 * Does the work of the {@code @DistributedLock} aspect, whether it runs as a Spring AOP proxy or
 * woven by AspectJ: reads the cached metadata, resolves the keys, acquires, runs the method,
 * releases on every exit path, and applies the failure strategy.
 *
 * <p>Release outcomes after the method ran: when the lease was lost meanwhile
 * ({@code LockLostException}) or the release's outcome is unknown ({@code LockBackendException}: the
 * lease may have been lost without anyone being told), the caller gets that exception instead of the
 * method's result (thrown, or as the failure of the async result). When the method itself failed,
 * its exception stays what the caller gets, with the release problem added as suppressed.
 * Thread-safe; one instance serves every locked method.
 */
public class LockAspectSupport {

    private static final Logger log = LoggerFactory.getLogger(LockAspectSupport.class);

    private final LockManager lockManager;
    private final LockExpressionEvaluator evaluator;
    private final LockOperationSource operations;
    private final Duration abortCheckInterval;
    private final boolean stopWorkByDefault;

    private LockAspectSupport(Builder builder) {
        this.lockManager = builder.lockManager;
        this.evaluator = new LockExpressionEvaluator(builder.beanFactory);
        this.operations = new LockOperationSource(evaluator, builder.beanFactory, builder.placeholders, builder.lockManager.backend());
        this.abortCheckInterval = builder.abortCheckInterval;
        this.stopWorkByDefault = builder.stopWorkOnLeaseLost;
    }

    /** Whether {@code operation}'s work is stopped when its lease is lost: its annotation's choice, or the default. */
    boolean stopsWork(LockOperation operation) {
        WhenLeaseLost when = operation.whenLeaseLost();
        return when == WhenLeaseLost.STOP || when == WhenLeaseLost.DEFAULT && stopWorkByDefault;
    }

    /**
     * Arms {@code stop} on every handle of an asynchronous result when the operation stops its work on a lost lease;
     * closing the handles (the release) disarms it.
     */
    void stopOnLeaseLost(LockOperation operation, List<LockHandle> held, Runnable stop) {
        if (stopsWork(operation)) {
            for (LockHandle handle : held) {
                handle.onLeaseLost(stop);
            }
        }
    }

    /** The failure an asynchronous result stopped for its lost lease ends with. */
    static LockLostException stoppedForLoss(LockOperation operation, List<LockHandle> held) {
        LockHandle lost = held.stream().filter(handle -> !handle.isHeld()).findFirst().orElse(held.get(0));
        return new LockLostException(lost.lockName(), lost.key(), "the lease was lost while " + operation.describe()
                + " ran, so its work was stopped (whenLeaseLost = STOP)");
    }

    /** Starts configuring the support over {@code lockManager}. */
    public static Builder builder(LockManager lockManager) {
        return new Builder(lockManager);
    }

    /** The metadata cache, also used by the startup validation. */
    public LockOperationSource operationSource() {
        return operations;
    }

    /** The lock manager locks are taken from. */
    public LockManager lockManager() {
        return lockManager;
    }

    /** The rest of the intercepted call: the method itself (and any inner advice). */
    @FunctionalInterface
    public interface Invocation {
        /**
         * Runs the method with {@code args}: the array the call was intercepted with, or a copy with the fencing token
         * in the place of a {@code @FencingToken} parameter. Its exceptions pass through unchanged.
         */
        @Nullable Object proceed(@Nullable Object[] args) throws Throwable;
    }

    /**
     * Runs {@code invocation} under the lock that {@code method}'s {@code @DistributedLock} describes.
     *
     * @param method     the called method (an interface method is fine)
     * @param target     the object it is called on, null for a static method
     * @param args       the call's arguments
     * @param invocation runs the method
     * @return the method's result, or what the failure strategy gives
     * @throws Throwable whatever the method throws, unchanged; {@code LockNotAcquiredException}
     *                   (strategy THROW), {@code LockKeyException}, {@code LockBackendException},
     *                   {@code LockLostException} from the lock
     */
    public @Nullable Object invoke(Method method, @Nullable Object target, @Nullable Object[] args, Invocation invocation) throws Throwable {
        Class<?> targetClass = target != null ? ClassUtils.getUserClass(target.getClass()) : method.getDeclaringClass();
        LockOperation operation = operations.operation(method, targetClass);
        if (operation == null) {
            return invocation.proceed(args);
        }
        Call call = new Call(operation, target, args,
                evaluator.context(operation.method(), args, operation.suspending(), target, targetClass), invocation);
        if (!conditionHolds(call)) {
            return invocation.proceed(args);
        }
        return switch (operation.resultKind()) {
            case PLAIN -> invokePlain(call);
            case COMPLETION_STAGE -> invokeCompletionStage(call);
            case MONO, FLUX -> ReactorLocks.invoke(this, call);
        };
    }

    /** One intercepted call: its metadata, arguments and evaluation context. */
    record Call(LockOperation operation, Object target, Object[] args, EvaluationContext context, Invocation invocation) {
    }

    private Object invokePlain(Call call) throws Throwable {
        List<LockHandle> held;
        try {
            held = acquire(call);
        } catch (LockNotAcquiredException e) {
            return onFailure(call, e);
        }
        Object result = runLocked(call, held);
        RuntimeException releaseProblem = releaseAll(held);
        if (releaseProblem != null) {
            throw releaseProblem;
        }
        return result;
    }

    private Object invokeCompletionStage(Call call) throws Throwable {
        boolean futureCompatible = call.operation().method().getReturnType().isAssignableFrom(CompletableFuture.class);
        List<LockHandle> held;
        try {
            held = acquire(call);
        } catch (LockNotAcquiredException e) {
            if (futureCompatible && call.operation().onFailure() == OnFailure.THROW) {
                return CompletableFuture.failedFuture(e);
            }
            return onFailure(call, e);
        } catch (LockKeyException | LockBackendException e) {
            if (futureCompatible) {
                return CompletableFuture.failedFuture(e);
            }
            throw e;
        }
        Object result = runLocked(call, held);
        if (result == null) {
            RuntimeException releaseProblem = releaseAll(held);
            if (releaseProblem != null) {
                throw releaseProblem;
            }
            return null;
        }
        detachFromThread(held);
        CompletionStage<?> stage = (CompletionStage<?>) result;
        if (!futureCompatible) {
            stopOnLeaseLost(call.operation(), held, () -> cancel(stage));
            // The method's own stage type is returned as it is: nobody can be handed a release problem.
            stage.whenComplete((value, failure) -> logUnreported(call.operation(), releaseAll(held)));
            return stage;
        }
        // A future of our own, completed after the release: the caller sees completion only once the
        // lock is free. The release hangs on the method's stage directly, so that cancelling the
        // returned future cannot skip it.
        CompletableFuture<Object> released = new CompletableFuture<>();
        AtomicBoolean stopped = new AtomicBoolean();
        stopOnLeaseLost(call.operation(), held, () -> {
            stopped.set(true);
            cancel(stage);
        });
        stage.whenComplete((value, failure) -> {
            RuntimeException problem = releaseAll(held);
            if (stopped.get() && failure != null) {
                // Cancelled by us: the caller learns why, the lost lease, rather than a bare cancellation.
                failure = problem != null ? problem : stoppedForLoss(call.operation(), held);
                problem = null;
            }
            Throwable outcome = failure != null ? failure : problem;
            if (failure != null && problem != null) {
                // get() and join() unwrap a CompletionException: the problem goes where the caller looks.
                Throwable seen = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
                seen.addSuppressed(problem);
            }
            if (outcome == null) {
                released.complete(value);
            } else if (!released.completeExceptionally(outcome)) {
                logUnreported(call.operation(), problem);
            }
        });
        if (stage instanceof CompletableFuture<?> original) {
            released.whenComplete((value, failure) -> {
                if (released.isCancelled()) {
                    original.cancel(false);
                }
            });
        }
        return released;
    }

    /** Cancels the method's stage when it can be (a {@code CompletableFuture}, or a stage that converts to its own). */
    private static void cancel(CompletionStage<?> stage) {
        try {
            stage.toCompletableFuture().cancel(true);
        } catch (UnsupportedOperationException cannot) {
            log.debug("dlock: the stage {} cannot be cancelled; its work runs on", stage.getClass().getName());
        }
    }

    /**
     * Hands the locks of a call whose result is still pending over to that result: the calling thread
     * no longer re-enters them. Called only after the method body ran, so that locked calls the body
     * makes on the same key re-enter. A handle that re-entered a key the thread already held outside
     * stays bound to the thread ({@link LockHandle#detachFromThread()}), so the outer holder keeps its
     * re-entry.
     */
    static void detachFromThread(List<LockHandle> held) {
        for (LockHandle handle : held) {
            handle.detachFromThread();
        }
    }

    /** Logs a release problem of an async result that nobody is left to receive (cancelled, or a stage type of the method's own). */
    void logUnreported(LockOperation operation, RuntimeException problem) {
        if (problem != null) {
            log.warn("dlock: releasing lock '{}' after the async result of {} ended failed", operation.lockName(),
                    operation.describe(), problem);
        }
    }

    /** Runs the method with the {@link LockContext} bound; if it throws, releases everything and rethrows. */
    Object runLocked(Call call, List<LockHandle> held) throws Throwable {
        LockContext context = LockContext.enter(call.operation().lockName(), held, call.operation().tokenReads());
        try {
            return call.invocation().proceed(argumentsWithToken(call, held));
        } catch (Throwable methodFailure) {
            context.exit();
            context = null;
            releaseAfterFailure(held, methodFailure);
            throw methodFailure;
        } finally {
            if (context != null) {
                context.exit();
            }
        }
    }

    /**
     * The call's arguments, with the fencing token in the place of its {@code @FencingToken} parameter: the token of
     * the one key (a {@code long} or {@code Long} parameter), or every key's token by key (a {@code Map}). A token
     * that cannot be had (the lease was lost before it was issued) fails the call before the method runs.
     */
    private static Object[] argumentsWithToken(Call call, List<LockHandle> held) {
        int index = call.operation().tokenParameter();
        Object[] args = call.args();
        if (index != LockOperation.NO_TOKEN_PARAMETER) {
            args = args.clone();
            if (call.operation().tokensByKey()) {
                Map<String, Long> tokens = new LinkedHashMap<>();
                for (LockHandle handle : held) {
                    tokens.put(handle.key(), handle.fencingToken());
                }
                args[index] = Collections.unmodifiableMap(tokens);
            } else {
                args[index] = held.get(0).fencingToken();
            }
        }
        if (call.operation().suspending()) {
            // The coroutine runs after this call returns, on its dispatcher's threads: the LockContext goes with it.
            args = SuspendingLocks.bindContinuation(args, LockContext.resumptions(call.operation().lockName(), held,
                    call.operation().tokenReads()));
        }
        return args;
    }

    /** Releases after the method (or an acquisition) failed: the failure stays, a release problem is added to it as suppressed. */
    static void releaseAfterFailure(List<LockHandle> held, Throwable failure) {
        RuntimeException releaseProblem = releaseAll(held);
        if (releaseProblem != null) {
            failure.addSuppressed(releaseProblem);
        }
    }

    /**
     * Releases every handle, last acquired first, and returns what the caller must get instead of a
     * successful result, null when every release went through: a lost lease ({@code LockLostException}),
     * a release whose outcome is unknown ({@code LockBackendException}), a misuse. Later problems are
     * added to the first as suppressed.
     */
    static RuntimeException releaseAll(List<LockHandle> held) {
        RuntimeException surfaced = null;
        for (int i = held.size() - 1; i >= 0; i--) {
            try {
                held.get(i).close();
            } catch (RuntimeException e) {
                if (surfaced == null) {
                    surfaced = e;
                } else {
                    surfaced.addSuppressed(e);
                }
            }
        }
        return surfaced;
    }

    /** Whether the call locks: true without a condition. */
    private boolean conditionHolds(Call call) {
        Expression condition = call.operation().condition();
        if (condition == null) {
            return true;
        }
        try {
            return Boolean.TRUE.equals(condition.getValue(call.context(), Boolean.class));
        } catch (EvaluationException e) {
            throw new LockAnnotationException("@DistributedLock condition '" + condition.getExpressionString() + "' of "
                    + call.operation().describe() + " failed to evaluate: " + e.getMessage(), e);
        }
    }

    /**
     * Acquires every key of the call, in sorted order, within one wait budget; all or nothing.
     *
     * @throws LockNotAcquiredException when one of them is not acquired (those taken are released)
     */
    List<LockHandle> acquire(Call call) {
        LockOperation operation = call.operation();
        List<String> keys = resolveKeys(call);
        BooleanSupplier abort = abortCondition(call);
        if (keys.size() == 1) {
            return List.of(lockManager.acquire(request(operation, keys.get(0), operation.waitTime(), abort)));
        }
        Duration waitTime = operation.waitTime() != null ? operation.waitTime() : lockManager.defaultWaitTime();
        long deadline = System.nanoTime() + waitTime.toNanos();
        List<LockHandle> held = new ArrayList<>(keys.size());
        try {
            for (String key : keys) {
                Duration remaining = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
                held.add(lockManager.acquire(request(operation, key, remaining, abort)));
            }
            return held;
        } catch (RuntimeException | Error e) {
            releaseAfterFailure(held, e);
            throw e;
        }
    }

    /**
     * Acquires every key of the call like {@link #acquire(Call)}, without blocking the calling thread:
     * the future completes on a dlock thread, with every handle bound to it for re-entry. Fails with
     * {@code LockNotAcquiredException} (those taken are released) or the store's error; cancelling it
     * gives up and releases whatever was taken.
     */
    CompletableFuture<AsyncKeyAcquisition.HeldLocks> acquireAsync(Call call) {
        LockOperation operation = call.operation();
        List<String> keys = resolveKeys(call);
        BooleanSupplier abort = abortCondition(call);
        Duration waitTime = operation.waitTime() != null ? operation.waitTime() : lockManager.defaultWaitTime();
        return new AsyncKeyAcquisition(lockManager, keys, key -> requestBuilder(operation, key, abort), waitTime).result();
    }

    private LockRequest request(LockOperation operation, String key, Duration waitTime, BooleanSupplier abort) {
        LockRequest.Builder request = requestBuilder(operation, key, abort);
        if (waitTime != null) {
            request.waitTime(waitTime);
        }
        return request.build();
    }

    private LockRequest.Builder requestBuilder(LockOperation operation, String key, BooleanSupplier abort) {
        return LockRequest.builder(key)
                .name(operation.lockName())
                .kind(operation.kind())
                .leaseTime(operation.leaseTime())
                .lockAtLeastFor(operation.lockAtLeastFor())
                .abortIf(abort)
                .abortCheckInterval(abortCheckInterval)
                .callSite(operation.callSite())
                .readsFencingToken(operation.tokenReads().wanted())
                .stopWorkOnLeaseLost(stopsWork(operation));
    }

    private BooleanSupplier abortCondition(Call call) {
        Expression abortIf = call.operation().abortIf();
        if (abortIf == null) {
            return null;
        }
        return () -> Boolean.TRUE.equals(abortIf.getValue(call.context(), Boolean.class));
    }

    /** The lock manager keys of the call ({@code <name>:<key>}), sorted and without duplicates. */
    List<String> resolveKeys(Call call) {
        LockOperation operation = call.operation();
        String name = operation.lockName();
        if (!operation.multiKey()) {
            Object value = evaluateKey(call, 0);
            return List.of(LockKeys.named(name, keyText(operation, operation.keySources().get(0), value)));
        }
        TreeSet<String> keys = new TreeSet<>();
        for (int i = 0; i < operation.keyExpressions().size(); i++) {
            String source = operation.keySources().get(i);
            Object value = evaluateKey(call, i);
            if (value instanceof Collection<?> collection) {
                for (Object element : collection) {
                    keys.add(LockKeys.named(name, keyText(operation, source, element)));
                }
            } else if (value != null && value.getClass().isArray()) {
                for (Object element : ObjectUtils.toObjectArray(value)) {
                    keys.add(LockKeys.named(name, keyText(operation, source, element)));
                }
            } else {
                keys.add(LockKeys.named(name, keyText(operation, source, value)));
            }
        }
        if (keys.isEmpty()) {
            throw new LockKeyException("@DistributedLock keys of " + operation.describe() + " resolved to no key: "
                    + operation.keySources() + " gave only empty collections or arrays; the method was not run");
        }
        return List.copyOf(keys);
    }

    private Object evaluateKey(Call call, int index) {
        LockOperation operation = call.operation();
        try {
            return operation.keyExpressions().get(index).getValue(call.context());
        } catch (EvaluationException e) {
            LockKeyException failure = new LockKeyException("@DistributedLock key '" + operation.keySources().get(index)
                    + "' of " + operation.describe() + " failed to evaluate: " + e.getMessage() + "; the method was not run");
            failure.initCause(e);
            throw failure;
        }
    }

    private static String keyText(LockOperation operation, String source, Object value) {
        String text = value == null ? null : String.valueOf(value);
        if (text == null || text.isBlank()) {
            throw new LockKeyException("@DistributedLock key '" + source + "' of " + operation.describe() + " is "
                    + (text == null ? "null" : "blank") + " for this call (is the argument or property null?); the method was not run");
        }
        return text;
    }

    /** Applies the failure strategy. */
    Object onFailure(Call call, LockNotAcquiredException failure) throws Throwable {
        LockOperation operation = call.operation();
        return switch (operation.onFailure()) {
            case THROW -> throw failure;
            case SKIP -> {
                log.debug("dlock: skipped {} because {}", operation.describe(), failure.getMessage());
                yield operation.emptyResult().get();
            }
            case FALLBACK -> callFallback(call, failure);
        };
    }

    private Object callFallback(Call call, LockNotAcquiredException failure) throws Throwable {
        LockOperation operation = call.operation();
        Object[] args = call.args();
        if (operation.suspending()) {
            return callSuspendingFallback(call, failure);
        }
        if (operation.fallbackTakesFailure()) {
            Object[] extended = Arrays.copyOf(args, args.length + 1);
            extended[args.length] = failure;
            args = extended;
        }
        try {
            return operation.fallback().invoke(call.target(), args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /**
     * Calls a suspend function's fallback the way Spring AOP calls the function itself: as a coroutine in the caller's
     * context, returned as the publisher that runs it, so the aspect's result is a {@code Mono} (or {@code Flux}) either way.
     */
    private static Object callSuspendingFallback(Call call, LockNotAcquiredException failure) throws Throwable {
        Object[] args = call.args();
        if (call.operation().fallbackTakesFailure()) {
            // The failure goes before the continuation, as the Kotlin declaration lists it.
            Object[] extended = Arrays.copyOf(args, args.length + 1);
            extended[args.length - 1] = failure;
            extended[args.length] = args[args.length - 1];
            args = extended;
        }
        return AopUtils.invokeJoinpointUsingReflection(call.target(), call.operation().fallback(), args);
    }

    /** Configures a {@link LockAspectSupport}. */
    public static final class Builder {
        private final LockManager lockManager;
        private BeanFactory beanFactory;
        private UnaryOperator<String> placeholders;
        private Duration abortCheckInterval = LockRequest.DEFAULT_ABORT_CHECK_INTERVAL;
        private boolean stopWorkOnLeaseLost;

        private Builder(LockManager lockManager) {
            this.lockManager = Objects.requireNonNull(lockManager, "lockManager");
        }

        /** Resolves {@code @beanName} references in expressions (optional). */
        public Builder beanFactory(BeanFactory beanFactory) {
            this.beanFactory = beanFactory;
            return this;
        }

        /** Resolves {@code ${...}} placeholders in {@code waitTime} and {@code leaseTime}, for example {@code environment::resolveRequiredPlaceholders}. */
        public Builder placeholderResolver(UnaryOperator<String> placeholders) {
            this.placeholders = placeholders;
            return this;
        }

        /** How often a waiter re-checks {@code abortIf} when no release notice arrives (default {@link LockRequest#DEFAULT_ABORT_CHECK_INTERVAL}). */
        public Builder abortCheckInterval(Duration interval) {
            this.abortCheckInterval = LockRequest.validAbortCheckInterval(interval);
            return this;
        }

        /**
         * Whether a method whose annotation says {@code whenLeaseLost = DEFAULT} has its work stopped when its lease is
         * lost (default false: it runs on, and the release reports the loss).
         */
        public Builder stopWorkOnLeaseLost(boolean stop) {
            this.stopWorkOnLeaseLost = stop;
            return this;
        }

        /** Builds the support. */
        public LockAspectSupport build() {
            return new LockAspectSupport(this);
        }
    }
}
