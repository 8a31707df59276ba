package dev.dlock.boot.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and tags {@link LockObservationDocumentation#HOLD}; define a bean of this type to replace
 * {@link DefaultLockHoldObservationConvention} (extend it to add to its tags).
 */
public interface LockHoldObservationConvention extends ObservationConvention<LockHoldObservationContext> {

    @Override
    default boolean supportsContext(Observation.Context context) {
        return context instanceof LockHoldObservationContext;
    }
}
