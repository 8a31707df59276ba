package dev.dlock.aspect;

import dev.dlock.annotation.OnFailure;
import dev.dlock.annotation.WhenLeaseLost;
import dev.dlock.core.LockKind;
import org.springframework.context.expression.AnnotatedElementKey;
import org.springframework.expression.Expression;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.List;

/**
 * Everything about one {@code @DistributedLock} method that does not depend on the call's
 * arguments: resolved once per (method, target class) by {@link LockOperationSource} and cached.
 *
 * @param method            the most specific method (the one whose parameters the expressions see)
 * @param element           the cache key of the method and its target class
 * @param lockName          the lock's static name
 * @param kind              the kind of lock: exclusive, fair, read, write or permits
 * @param keyExpressions    the parsed key expressions: one for {@code key}, one per entry of {@code keys}
 * @param keySources        the key expressions' source text, for error messages
 * @param multiKey          whether the lock came from {@code keys} (expanded, sorted, deduplicated)
 * @param condition         the parsed condition, null when always locked
 * @param abortIf           the parsed abort condition, null when none
 * @param waitTime          the wait time, null for the lock manager's default
 * @param leaseTime         the fixed lease, null for a watchdog-managed one
 * @param lockAtLeastFor    the shortest hold, null for none
 * @param onFailure         what happens when the lock is not acquired
 * @param fallback          the fallback method, null unless {@code onFailure} is FALLBACK
 * @param fallbackTakesFailure whether the fallback takes the {@code LockNotAcquiredException} as last argument
 * @param resultKind        how the return value is treated
 * @param emptyResult       what SKIP returns (for async kinds: what the completed stage holds)
 * @param callSite          {@code OrderService.transfer(..)}: who takes the lock, in lock-order warnings
 * @param tokenReads        whether calls read their fencing token: declared, or seen in an earlier call
 * @param tokenParameter    the index of the {@code @FencingToken} parameter, {@link #NO_TOKEN_PARAMETER} when none
 * @param tokensByKey       whether that parameter is a {@code Map} of every key's token, not one {@code long}
 * @param whenLeaseLost     what happens to the work when the lease is lost, {@code DEFAULT} for the configured default
 * @param suspending        whether it is a Kotlin suspend function (its last parameter the continuation, not an argument)
 */
record LockOperation(Method method, AnnotatedElementKey element, String lockName, LockKind kind,
                     List<Expression> keyExpressions, List<String> keySources, boolean multiKey,
                     Expression condition, Expression abortIf, Duration waitTime, Duration leaseTime,
                     Duration lockAtLeastFor, OnFailure onFailure, Method fallback, boolean fallbackTakesFailure,
                     ResultKind resultKind, EmptyResult emptyResult, String callSite, TokenReads tokenReads,
                     int tokenParameter, boolean tokensByKey, WhenLeaseLost whenLeaseLost,
                     boolean suspending) {

    /** {@link #tokenParameter()} of a method without a {@code @FencingToken} parameter. */
    static final int NO_TOKEN_PARAMETER = -1;

    /**
     * Whether the method's calls read their fencing token, so that its acquisitions ask the store to issue it at once
     * ({@code LockRequest.readsFencingToken}): declared ({@code fencingToken = true}), or learnt from the first call
     * that read it through {@link LockContext}. The only mutable part of the operation; a stale read costs one call the
     * round trip it would have cost anyway.
     */
    static final class TokenReads {
        private final boolean declared;
        private volatile boolean seen;

        TokenReads(boolean declared) {
            this.declared = declared;
        }

        /** Whether acquisitions for the method should have the token issued with them. */
        boolean wanted() {
            return declared || seen;
        }

        /** A call of the method read its token. */
        void seen() {
            if (!seen) {
                seen = true;
            }
        }
    }

    /** How the method's result relates to the time the lock is held. */
    enum ResultKind {
        /** The lock is released when the method returns or throws. */
        PLAIN,
        /** The lock is released when the returned stage completes. */
        COMPLETION_STAGE,
        /** The lock is taken on subscribe and released on terminate or cancel; also a Kotlin suspend function's. */
        MONO,
        /** The lock is taken on subscribe and released on terminate or cancel; also a suspend function's returning {@code Flow}. */
        FLUX
    }

    /** Produces the value SKIP returns, fresh for each call where it is mutable. */
    @FunctionalInterface
    interface EmptyResult {
        /** The empty value. */
        Object get();
    }

    /** {@code Class.method(ParamType, ...)}, for messages. */
    String describe() {
        return LockOperationSource.describe(method);
    }
}
