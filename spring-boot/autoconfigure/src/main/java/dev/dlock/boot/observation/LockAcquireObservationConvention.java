package dev.dlock.boot.observation;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * Names and tags {@link LockObservationDocumentation#ACQUIRE}; define a bean of this type to replace
 * {@link DefaultLockAcquireObservationConvention} (extend it to add to its tags).
 */
public interface LockAcquireObservationConvention extends ObservationConvention<LockAcquireObservationContext> {

    @Override
    default boolean supportsContext(Observation.Context context) {
        return context instanceof LockAcquireObservationContext;
    }
}
