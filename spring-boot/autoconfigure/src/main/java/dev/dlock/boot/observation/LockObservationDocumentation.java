package dev.dlock.boot.observation;

import dev.dlock.boot.metrics.LockMetrics;
import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * dlock's observations. Each is a span (a child of the caller's current observation) and, through the application's
 * meter observation handler, dlock's timers: {@code dlock.lock.acquire} and {@code dlock.lock.hold}, with the long-task
 * timers {@code dlock.lock.acquire.active} (callers waiting now) and {@code dlock.lock.hold.active} (locks held now).
 * Low-cardinality keys become meter tags; high-cardinality keys reach spans only.
 */
public enum LockObservationDocumentation implements ObservationDocumentation {

    /** One acquisition, its wait included, from the attempt to the lock taken or refused. */
    ACQUIRE {
        @Override
        public String getName() {
            return LockMetrics.ACQUIRE;
        }

        @Override
        public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
            return DefaultLockAcquireObservationConvention.class;
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames() {
            return LowCardinalityKeyNames.values();
        }

        @Override
        public KeyName[] getHighCardinalityKeyNames() {
            return new KeyName[] {HighCardinalityKeyNames.LOCK_KEY, HighCardinalityKeyNames.FENCING_TOKEN};
        }
    },

    /** One hold, from the lock taken to its release. */
    HOLD {
        @Override
        public String getName() {
            return LockMetrics.HOLD;
        }

        @Override
        public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
            return DefaultLockHoldObservationConvention.class;
        }

        @Override
        public KeyName[] getLowCardinalityKeyNames() {
            return new KeyName[] {LowCardinalityKeyNames.LOCK_NAME};
        }

        @Override
        public KeyName[] getHighCardinalityKeyNames() {
            return HighCardinalityKeyNames.values();
        }
    };

    @Override
    public String getPrefix() {
        return "dlock.";
    }

    /** Bounded keys: meter tags too. */
    public enum LowCardinalityKeyNames implements KeyName {

        /** The lock's static name (the annotation's {@code name}, or its default). */
        LOCK_NAME {
            @Override
            public String asString() {
                return LockMetrics.TAG_LOCK_NAME;
            }
        },

        /** How an acquisition ended: {@code acquired}, {@code timeout}, {@code aborted} or {@code error}; set when it ends. */
        RESULT {
            @Override
            public String asString() {
                return LockMetrics.TAG_RESULT;
            }
        }
    }

    /** Unbounded keys: spans only, never meters. */
    public enum HighCardinalityKeyNames implements KeyName {

        /** The resolved key; left out with {@code dlock.observation.key-in-spans=false}. */
        LOCK_KEY {
            @Override
            public String asString() {
                return "lock.key";
            }
        },

        /** The fencing token, when the store issued it with the acquisition (a Redis exclusive lock's comes later). */
        FENCING_TOKEN {
            @Override
            public String asString() {
                return "fencing.token";
            }
        },

        /** Why the lease was lost while held; absent when it was not. */
        LEASE_LOST {
            @Override
            public String asString() {
                return "lease.lost";
            }
        }
    }
}
