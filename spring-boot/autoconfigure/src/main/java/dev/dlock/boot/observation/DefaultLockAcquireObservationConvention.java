package dev.dlock.boot.observation;

import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.boot.observation.LockObservationDocumentation.HighCardinalityKeyNames;
import dev.dlock.boot.observation.LockObservationDocumentation.LowCardinalityKeyNames;
import dev.dlock.core.HeldLock;
import io.micrometer.common.KeyValues;

/**
 * The default names and tags of {@link LockObservationDocumentation#ACQUIRE}: observation {@code dlock.lock.acquire},
 * span {@code dlock acquire <name>}, low-cardinality {@code lock.name} and (once it ended) {@code result},
 * high-cardinality {@code lock.key} and {@code fencing.token}.
 */
public class DefaultLockAcquireObservationConvention implements LockAcquireObservationConvention {

    private final boolean keyInSpans;

    /** The convention that puts the key in spans. */
    public DefaultLockAcquireObservationConvention() {
        this(true);
    }

    /** The convention; {@code keyInSpans} false leaves the key out of spans (when keys carry personal data). */
    public DefaultLockAcquireObservationConvention(boolean keyInSpans) {
        this.keyInSpans = keyInSpans;
    }

    @Override
    public String getName() {
        return LockMetrics.ACQUIRE;
    }

    @Override
    public String getContextualName(LockAcquireObservationContext context) {
        return "dlock acquire " + context.getLockName();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(LockAcquireObservationContext context) {
        KeyValues values = KeyValues.of(LowCardinalityKeyNames.LOCK_NAME.withValue(context.getLockName()));
        String result = context.getResult();
        return result == null ? values : values.and(LowCardinalityKeyNames.RESULT.withValue(result));
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(LockAcquireObservationContext context) {
        KeyValues values = keyInSpans ? KeyValues.of(HighCardinalityKeyNames.LOCK_KEY.withValue(context.getKey())) : KeyValues.empty();
        long token = context.getFencingToken();
        return token == HeldLock.TOKEN_NOT_ISSUED ? values
                : values.and(HighCardinalityKeyNames.FENCING_TOKEN.withValue(Long.toString(token)));
    }
}
