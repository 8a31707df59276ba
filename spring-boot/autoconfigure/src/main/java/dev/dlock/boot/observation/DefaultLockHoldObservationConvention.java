package dev.dlock.boot.observation;

import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.boot.observation.LockObservationDocumentation.HighCardinalityKeyNames;
import dev.dlock.boot.observation.LockObservationDocumentation.LowCardinalityKeyNames;
import dev.dlock.core.HeldLock;
import io.micrometer.common.KeyValues;

/**
 * The default names and tags of {@link LockObservationDocumentation#HOLD}: observation {@code dlock.lock.hold}, span
 * {@code dlock hold <name>}, low-cardinality {@code lock.name}, high-cardinality {@code lock.key},
 * {@code fencing.token} and, when the lease was lost while held, {@code lease.lost} with the reason.
 */
public class DefaultLockHoldObservationConvention implements LockHoldObservationConvention {

    private final boolean keyInSpans;

    /** The convention that puts the key in spans. */
    public DefaultLockHoldObservationConvention() {
        this(true);
    }

    /** The convention; {@code keyInSpans} false leaves the key out of spans (when keys carry personal data). */
    public DefaultLockHoldObservationConvention(boolean keyInSpans) {
        this.keyInSpans = keyInSpans;
    }

    @Override
    public String getName() {
        return LockMetrics.HOLD;
    }

    @Override
    public String getContextualName(LockHoldObservationContext context) {
        return "dlock hold " + context.getLockName();
    }

    @Override
    public KeyValues getLowCardinalityKeyValues(LockHoldObservationContext context) {
        return KeyValues.of(LowCardinalityKeyNames.LOCK_NAME.withValue(context.getLockName()));
    }

    @Override
    public KeyValues getHighCardinalityKeyValues(LockHoldObservationContext context) {
        KeyValues values = keyInSpans ? KeyValues.of(HighCardinalityKeyNames.LOCK_KEY.withValue(context.getKey())) : KeyValues.empty();
        long token = context.getFencingToken();
        if (token != HeldLock.TOKEN_NOT_ISSUED) {
            values = values.and(HighCardinalityKeyNames.FENCING_TOKEN.withValue(Long.toString(token)));
        }
        String lost = context.getLeaseLostReason();
        return lost == null ? values : values.and(HighCardinalityKeyNames.LEASE_LOST.withValue(lost));
    }
}
