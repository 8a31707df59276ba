package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One acquisition that blocks no caller: the same steps as {@link LockManager#acquire}, as a state
 * machine. It waits for this JVM's turn in the key's gate (a future, not a parked thread), then asks
 * the store on a pool thread; between attempts it is parked on nothing — a timer or a release notice
 * starts the next attempt. At most one step runs at a time: a step is started only by whoever wins
 * {@link #armed}, or directly by the step before it.
 */
final class AsyncAcquisition {

    private static final Logger log = LoggerFactory.getLogger(AsyncAcquisition.class);

    private final LockManager manager;
    private final AsyncRuntime runtime;
    private final LockRequest request;
    private final String key;
    private final long start;
    private final long deadline;
    private final boolean watched;
    private final long leaseMillis;
    private final CompletableFuture<LockHandle> result = new CompletableFuture<>();
    private final WaitPacing pacing = new WaitPacing();
    /** True while the acquisition waits for its next store attempt; whoever resets it starts that attempt. */
    private final AtomicBoolean armed = new AtomicBoolean();
    /** Set by a release notice; read after arming, so a notice during an attempt is never lost. */
    private volatile boolean noticed;
    private volatile ScheduledFuture<?> timer;
    private KeyGate gate;
    private CompletableFuture<Void> turn;
    private String owner;
    private boolean subscribed;

    AsyncAcquisition(LockManager manager, AsyncRuntime runtime, LockRequest request, String key) {
        this.manager = manager;
        this.runtime = runtime;
        this.request = request;
        this.key = key;
        this.start = System.nanoTime();
        this.deadline = manager.deadline(request, start);
        this.watched = request.leaseTime() == null;
        this.leaseMillis = watched ? manager.watchdogLeaseMillis : request.leaseTime().toMillis();
    }

    CompletableFuture<LockHandle> start() {
        manager.listener.onAcquireAttempt(request.name(), key);
        runtime.track(this);
        gate = manager.enterGate(request.kind(), key);
        turn = gate.enterAsync();
        // The turn may be granted under the gate's lock by a releasing thread: the step runs on the pool.
        turn.thenRun(() -> step(this::attemptInStore));
        if (!turn.isDone()) {
            runtime.schedule(this::checkWhileQueued, checkInterval());
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
        if (turn.isDone()) {
            return;
        }
        LockNotAcquiredException.Reason reason = null;
        try {
            if (result.isDone()) {
                reason = LockNotAcquiredException.Reason.ABORTED;
            } else if (deadline - System.nanoTime() <= 0) {
                reason = LockNotAcquiredException.Reason.TIMEOUT;
            } else if (request.abortIf() != null && request.abortIf().getAsBoolean()) {
                reason = LockNotAcquiredException.Reason.ABORTED;
            }
        } catch (RuntimeException | Error e) {
            if (gate.withdraw(turn)) {
                finish(null, e);
            }
            return;
        }
        if (reason == null) {
            runtime.schedule(this::checkWhileQueued, checkInterval());
        } else if (gate.withdraw(turn)) {
            finish(reason, null);
        }
        // Otherwise the turn was granted meanwhile: the store step sees the same condition and ends there.
    }

    private long checkInterval() {
        long remaining = Math.max(0, deadline - System.nanoTime());
        return request.abortIf() == null ? remaining : Math.min(remaining, request.abortCheckInterval().toNanos());
    }

    /** One store attempt, on a pool thread; schedules the next one or ends the acquisition. */
    private void attemptInStore() {
        try {
            if (result.isDone()) {
                leaveTurn(LockNotAcquiredException.Reason.ABORTED, null);
                return;
            }
            if (owner == null) {
                owner = manager.ownerTokens.next();
            }
            BooleanSupplier abortIf = request.abortIf();
            if (abortIf != null && abortIf.getAsBoolean()) {
                leaveTurn(LockNotAcquiredException.Reason.ABORTED, null);
                return;
            }
            noticed = false;
            manager.expectGrant(owner);
            long sentAt = System.nanoTime();
            AcquireResult answer = manager.backend().tryAcquire(request.kind(), key, owner, manager.storeLeaseMillis(watched, leaseMillis));
            if (answer instanceof AcquireResult.Acquired acquired) {
                LockManager.StoreOutcome outcome = manager.held(gate, request, key, owner, acquired.fencingToken(), leaseMillis,
                        watched, sentAt, true, 0);
                if (outcome instanceof LockManager.Taken taken) {
                    taken(taken.lease());
                } else if (outcome instanceof LockManager.Expired) {
                    if (deadline - System.nanoTime() <= 0) {
                        leaveTurn(LockNotAcquiredException.Reason.TIMEOUT, null);
                    } else {
                        step(this::attemptInStore);
                    }
                } else {
                    leaveTurn(((LockManager.Refused) outcome).reason(), null);
                }
                return;
            }
            long remaining = deadline - System.nanoTime();
            if (remaining <= 0) {
                leaveTurn(LockNotAcquiredException.Reason.TIMEOUT, null);
                return;
            }
            if (!subscribed) {
                // Subscribe, then try again at once: a release before the subscription would go unnoticed.
                subscribed = true;
                gate.wakeOnRelease(manager.notices, key, this::onReleaseNotice);
                step(this::attemptInStore);
                return;
            }
            long ttlNanos = TimeUnit.MILLISECONDS.toNanos(((AcquireResult.Held) answer).remainingTtlMillis());
            long pause = pacing.nextPauseNanos(gate.noticesActive(), ttlNanos, remaining, request);
            armed.set(true);
            if (noticed || result.isDone()) {
                wake();
            } else {
                timer = runtime.schedule(this::wake, pause);
            }
        } catch (RuntimeException | Error e) {
            leaveTurn(null, e);
        }
    }

    private void onReleaseNotice() {
        noticed = true;
        wake();
    }

    /** Starts the next attempt now, if one is waiting. */
    private void wake() {
        if (armed.compareAndSet(true, false)) {
            ScheduledFuture<?> pending = timer;
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
            leaveTurn(null, new IllegalStateException("lock manager is closed; cannot lock key '" + key + "'"));
        }
    }

    private void taken(Lease lease) {
        // The lock belongs to the caller's flow, not to the pool thread that happened to take it: another flow that
        // later runs on this thread must wait for the key like anyone else. This thread is busy until here, so no
        // other flow saw the binding.
        lease.ownerThread = null;
        gate.stopWaking();
        runtime.untrack(this);
        manager.listener.onAcquired(request.name(), key, lease.fencingToken, Duration.ofNanos(System.nanoTime() - start));
        LeaseHandle handle = new LeaseHandle(lease, false);
        if (!result.complete(handle)) {
            // Cancelled while the store call ran: nobody will release it but us.
            try {
                handle.close();
            } catch (RuntimeException e) {
                log.warn("dlock could not release key '{}' taken after its acquisition was cancelled", key, e);
            }
        }
    }

    /** Ends an acquisition that had the turn: tells the store it stopped trying, and gives the turn back. */
    private void leaveTurn(LockNotAcquiredException.Reason reason, Throwable error) {
        gate.stopWaking();
        if (owner != null) {
            manager.withdrawQuietly(request.kind(), key, owner);
        }
        gate.leave();
        finish(reason, error);
    }

    private void finish(LockNotAcquiredException.Reason reason, Throwable error) {
        runtime.untrack(this);
        manager.leaveGate(request.kind(), key, gate);
        Duration waited = Duration.ofNanos(System.nanoTime() - start);
        if (error != null) {
            manager.listener.onAcquireFailed(request.name(), key, LockListener.AcquireFailure.ERROR, waited, error);
            result.completeExceptionally(error);
        } else {
            manager.listener.onAcquireFailed(request.name(), key, LockManager.failureOf(reason), waited, null);
            result.completeExceptionally(new LockNotAcquiredException(request.name(), key, reason, waited));
        }
    }

    /** The manager closed while this acquisition waited: it fails now; its turn is given back by the step that sees it. */
    void managerClosed() {
        result.completeExceptionally(new IllegalStateException("lock manager was closed while key '" + key + "' was awaited"));
        wake();
        checkWhileQueued();
    }
}
