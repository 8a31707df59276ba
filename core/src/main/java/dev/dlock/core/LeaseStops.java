package dev.dlock.core;

import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The loss reactions armed on one {@link Lease}: each runs once, on the events thread, when the lease is reported lost
 * while it is armed, or at once when it is armed on a lease known lost already. Never for a lease that ended by its
 * release: the handle disarms its reactions before it releases.
 */
final class LeaseStops {

    private static final Logger log = LoggerFactory.getLogger(LeaseStops.class);

    private final Lease lease;
    /** Guarded by this; null once the lease was reported lost (every reaction armed then fired). */
    private List<Armed> armed = new ArrayList<>(1);

    LeaseStops(Lease lease) {
        this.lease = lease;
    }

    /** Arms {@code stop}, or {@code interrupt} of that thread (one of them non-null). */
    Armed arm(Runnable stop, Thread interrupt) {
        Armed reaction = new Armed(stop, interrupt);
        boolean lostAlready;
        synchronized (this) {
            lostAlready = armed == null;
            if (!lostAlready) {
                armed.add(reaction);
            }
        }
        if (lostAlready || lease.recordedState() == LockState.LOST) {
            fire(reaction);
        }
        return reaction;
    }

    /** The lease was reported lost: every reaction armed now runs, and every one armed later runs at once. */
    void leaseLost() {
        List<Armed> toFire;
        synchronized (this) {
            toFire = armed;
            armed = null;
        }
        if (toFire != null) {
            toFire.forEach(this::fire);
        }
    }

    private void fire(Armed reaction) {
        if (reaction.claim()) {
            lease.manager.backgroundEvents.stopWork(reaction::run);
        }
    }

    private synchronized void forget(Armed reaction) {
        if (armed != null) {
            armed.remove(reaction);
        }
    }

    /** One armed reaction. */
    final class Armed implements LossReaction {
        private static final int ARMED = 0;
        private static final int CLAIMED = 1;
        private static final int FIRED = 2;
        private static final int CLOSED = 3;

        private final Runnable stop;
        private final Thread interrupt;
        /** Guarded by this; an interrupt is made under it, so none lands after {@link #close()} returns. */
        private int state = ARMED;
        private boolean ran;

        Armed(Runnable stop, Thread interrupt) {
            this.stop = stop;
            this.interrupt = interrupt;
        }

        /** Whether it interrupts a thread (rather than running a reaction of the holder's). */
        boolean interrupts() {
            return interrupt != null;
        }

        synchronized boolean claim() {
            if (state != ARMED) {
                return false;
            }
            state = CLAIMED;
            return true;
        }

        /** On the events thread: stops the work unless closed meanwhile. Never throws. */
        void run() {
            try {
                if (interrupt != null) {
                    synchronized (this) {
                        if (state != CLAIMED) {
                            return;
                        }
                        state = FIRED;
                        ran = true;
                        log.info("dlock: interrupting thread '{}', holder of {}, whose lease was lost: {}", interrupt.getName(), lease,
                                lease.lostReason);
                        interrupt.interrupt();
                    }
                    return;
                }
                synchronized (this) {
                    if (state != CLAIMED) {
                        return;
                    }
                    state = FIRED;
                    ran = true;
                }
                log.info("dlock: stopping the work of {}: its lease was lost: {}", lease, lease.lostReason);
                stop.run();
            } catch (RuntimeException | Error e) {
                log.warn("dlock: stopping the work of {} after its lease was lost failed", lease, e);
            }
        }

        @Override
        public synchronized boolean fired() {
            return ran;
        }

        @Override
        public void close() {
            boolean clearInterrupt;
            synchronized (this) {
                if (state == CLOSED) {
                    return;
                }
                clearInterrupt = ran && interrupt == Thread.currentThread();
                state = CLOSED;
            }
            forget(this);
            if (clearInterrupt) {
                // Ours, made for the section that just ended: the thread goes on (its release, its pool) uninterrupted.
                Thread.interrupted();
            }
        }
    }
}
