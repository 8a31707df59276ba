package dev.dlock.core;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition that blocks no caller: the {@link Acquisition} steps of {@link LockManager#acquire}, driven by
 * futures. It waits for this JVM's turn in the key's gate (a future, not a parked thread), then asks
 * the store on a pool thread; between attempts it is parked on nothing — a timer or a release notice
 * starts the next attempt. At most one step runs at a time: a step is started only by whoever wins
 * {@link #armed}, or directly by the step before it.
 */
final class AsyncAcquisition {

    private static final Logger log = LoggerFactory.getLogger(AsyncAcquisition.class);

    private final AsyncRuntime runtime;
    private final LockRequest request;
    private final String key;
    private final CompletableFuture<LockHandle> result = new CompletableFuture<>();
    /** True while the acquisition waits for its next store attempt; whoever resets it starts that attempt. */
    private final AtomicBoolean armed = new AtomicBoolean();
    /** The release notices, counted by the key's gate, that end the current wait; set before arming. */
    private volatile long awaitedNotices = Long.MAX_VALUE;
    private volatile Future<?> timer;
    /** The pending check while queued for the turn; guarded by this. */
    private Future<?> queuedCheck;
    private final Acquisition acquisition;
    /** The place in the gate's queue; null for a fair lock, which takes no turn. */
    private LocalTurn.Waiter place;

    AsyncAcquisition(LockManager manager, AsyncRuntime runtime, LockRequest request, String key) {
        this.runtime = runtime;
        this.request = request;
        this.key = key;
        this.acquisition = new Acquisition(manager, request, key, this::onReleaseNotice);
    }

    CompletableFuture<LockHandle> start() {
        runtime.track(this);
        place = acquisition.enterAsync(this::scheduleQueuedCheck);
        CompletableFuture<LocalTurn.HandOff> turn = place == null ? CompletableFuture.completedFuture(null) : place.turn;
        // The turn may be granted under the gate's lock by a releasing thread: the step runs on the pool.
        turn.thenAccept(handOff -> {
            acquisition.turnGranted(handOff);
            step(this::attemptInStore);
        });
        if (!turn.isDone()) {
            scheduleQueuedCheck();
        }
        result.whenComplete((handle, failure) -> {
            if (result.isCancelled()) {
                wake();
                checkWhileQueued();
            }
        });
        return result;
    }

    /** While queued behind this JVM's other waiters: gives up at the deadline, on the abort condition, or when cancelled. */
    private void checkWhileQueued() {
        if (place == null || place.turn.isDone()) {
            return;
        }
        // The turn's holder may have lapsed: its turn then passes on (perhaps to this acquisition).
        if (acquisition.gate.turn.endLapsedTurn() && place.turn.isDone()) {
            return;
        }
        LockNotAcquiredException.Reason reason = null;
        try {
            if (result.isDone()) {
                reason = LockNotAcquiredException.Reason.ABORTED;
            } else if (acquisition.deadline - System.nanoTime() <= 0) {
                reason = LockNotAcquiredException.Reason.TIMEOUT;
            } else if (request.abortIf() != null && request.abortIf().getAsBoolean()) {
                reason = LockNotAcquiredException.Reason.ABORTED;
            }
        } catch (RuntimeException | Error e) {
            if (acquisition.gate.turn.withdraw(place)) {
                finish(null, e);
            }
            return;
        }
        if (reason == null) {
            scheduleQueuedCheck();
        } else if (acquisition.gate.turn.withdraw(place)) {
            finish(reason, null);
        }
        // Otherwise the turn was granted (or a releasing holder is handing it over): the store step sees the same
        // condition and ends there.
    }

    /** (Re)schedules the one check while queued: at most one is pending, whoever asks for it. */
    private synchronized void scheduleQueuedCheck() {
        Future<?> pending = queuedCheck;
        if (pending != null) {
            pending.cancel(false);
        }
        try {
            queuedCheck = runtime.schedule(this::checkWhileQueued, nextCheckNanos());
        } catch (RejectedExecutionException e) {
            // The manager closed: managerClosed() fails the acquisition.
        }
    }

    /** When to check next while queued: at the deadline, the abort check, or when the turn's holder may lapse. */
    private long nextCheckNanos() {
        return Math.min(checkInterval(), acquisition.gate.turn.nanosUntilTurnLapses());
    }

    private long checkInterval() {
        long remaining = Math.max(0, acquisition.deadline - System.nanoTime());
        return request.abortIf() == null ? remaining : Math.min(remaining, request.abortCheckInterval().toNanos());
    }

    /** One store attempt, on a pool thread; schedules the next one or ends the acquisition. */
    private void attemptInStore() {
        try {
            if (result.isDone()) {
                finish(LockNotAcquiredException.Reason.ABORTED, null);
                return;
            }
            Acquisition.Step next = acquisition.attempt();
            if (next instanceof Acquisition.Taken taken) {
                taken(taken.lease());
            } else if (next instanceof Acquisition.Refused refused) {
                finish(refused.reason(), null);
            } else {
                Acquisition.Wait wait = (Acquisition.Wait) next;
                awaitedNotices = wait.notices();
                armed.set(true);
                if (acquisition.gate.notices.noticeCount() >= wait.notices() || result.isDone()) {
                    wake();
                } else {
                    timer = runtime.schedule(this::wake, wait.nanos());
                }
            }
        } catch (InterruptedException e) {
            finish(LockNotAcquiredException.Reason.INTERRUPTED, null);
        } catch (RuntimeException | Error e) {
            finish(null, e);
        }
    }

    private void onReleaseNotice() {
        if (acquisition.gate.notices.noticeCount() >= awaitedNotices) {
            wake();
        }
    }

    /** Starts the next attempt now, if one is waiting. */
    private void wake() {
        if (armed.compareAndSet(true, false)) {
            Future<?> pending = timer;
            if (pending != null) {
                pending.cancel(false);
            }
            step(this::attemptInStore);
        }
    }

    private void step(Runnable work) {
        try {
            runtime.execute(work);
        } catch (RejectedExecutionException e) {
            // The manager closed: managerClosed() fails the acquisition; the turn is given back here.
            finish(null, new IllegalStateException("lock manager is closed; cannot lock key '" + key + "'"));
        }
    }

    private void taken(Lease lease) {
        // The lock belongs to the caller's flow, not to the pool thread that happened to take it: another flow that
        // later runs on this thread must wait for the key like anyone else. This thread is busy until here, so no
        // other flow saw the binding.
        lease.ownerThread = null;
        runtime.untrack(this);
        LeaseHandle handle = acquisition.taken(lease);
        if (!result.complete(handle)) {
            // Cancelled while the store call ran: nobody will release it but us.
            try {
                handle.close();
            } catch (RuntimeException e) {
                log.warn("dlock could not release key '{}' taken after its acquisition was cancelled", key, e);
            }
        }
    }

    /** Ends an acquisition without the key: the store is told it stopped trying, and the turn (if it had it) is given back. */
    private void finish(LockNotAcquiredException.Reason reason, Throwable error) {
        acquisition.giveUp();
        runtime.untrack(this);
        Duration waited = acquisition.failed(reason, error);
        result.completeExceptionally(error != null ? error : new LockNotAcquiredException(request.name(), key, reason, waited,
                acquisition.waitTime()));
    }

    /** The manager closed while this acquisition waited: it fails now; its turn is given back by the step that sees it. */
    void managerClosed() {
        result.completeExceptionally(new IllegalStateException("lock manager was closed while key '" + key + "' was awaited"));
        wake();
        checkWhileQueued();
    }
}
