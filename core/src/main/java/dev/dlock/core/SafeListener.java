package dev.dlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * Fans events out to the registered listeners; a listener that throws is logged and never reaches the caller. The engine
 * calls the {@link AcquisitionContext} form of an acquisition's events, which each listener may take in either form.
 */
final class SafeListener implements LockListener {

    private static final Logger log = LoggerFactory.getLogger(SafeListener.class);

    private final LockListener[] listeners;

    SafeListener(List<LockListener> listeners) {
        this.listeners = listeners.toArray(LockListener[]::new);
    }

    private void each(String event, Consumer<LockListener> call) {
        for (LockListener listener : listeners) {
            try {
                call.accept(listener);
            } catch (Throwable t) {
                log.warn("dlock listener {} failed on {}; ignored", listener, event, t);
            }
        }
    }

    @Override
    public void onAcquireAttempt(AcquisitionContext acquisition) {
        each("acquire attempt", l -> l.onAcquireAttempt(acquisition));
    }

    @Override
    public void onAcquired(AcquisitionContext acquisition, long fencingToken, Duration waited) {
        each("acquired", l -> l.onAcquired(acquisition, fencingToken, waited));
    }

    @Override
    public void onAcquireFailed(AcquisitionContext acquisition, AcquireFailure failure, Duration waited, Throwable error) {
        each("acquire failed", l -> l.onAcquireFailed(acquisition, failure, waited, error));
    }

    @Override
    public void onReleased(AcquisitionContext acquisition, Duration held) {
        each("released", l -> l.onReleased(acquisition, held));
    }

    @Override
    public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
        each("renewal", l -> l.onRenewal(lockName, key, outcome));
    }

    @Override
    public void onLockOrderInversion(String lockName, String otherLockName) {
        each("lock-order inversion", l -> l.onLockOrderInversion(lockName, otherLockName));
    }

    @Override
    public void onForcedRelease(String lockName, String key, List<LockHolder> holders) {
        each("forced release", l -> l.onForcedRelease(lockName, key, holders));
    }

    @Override
    public void onLeaseLost(AcquisitionContext acquisition, String reason) {
        each("lease lost", l -> l.onLeaseLost(acquisition, reason));
    }
}
