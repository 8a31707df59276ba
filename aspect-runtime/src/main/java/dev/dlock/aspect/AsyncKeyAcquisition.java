package dev.dlock.aspect;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;

/**
 * The keys of one call acquired without blocking, in order, within one wait budget; all or nothing.
 * Cancelling {@link #result()} cancels the acquisition in flight and releases the keys already taken,
 * so a subscriber that goes away while the call waits leaves nothing locked.
 */
final class AsyncKeyAcquisition {

    private static final Logger log = LoggerFactory.getLogger(AsyncKeyAcquisition.class);

    /** The handles of one call, once every key is held. */
    record HeldLocks(List<LockHandle> handles) {
    }

    private final LockManager lockManager;
    private final List<String> keys;
    private final Function<String, LockRequest.Builder> requests;
    private final long deadline;
    private final CompletableFuture<HeldLocks> result = new CompletableFuture<>();
    /** Guarded by this. */
    private final List<LockHandle> held = new ArrayList<>();
    /** Guarded by this. */
    private CompletableFuture<LockHandle> inFlight;

    /**
     * Starts acquiring {@code keys} in order, each through the request {@code requests} builds for it,
     * within {@code waitTime} for all of them.
     */
    AsyncKeyAcquisition(LockManager lockManager, List<String> keys, Function<String, LockRequest.Builder> requests, Duration waitTime) {
        this.lockManager = lockManager;
        this.keys = keys;
        this.requests = requests;
        this.deadline = System.nanoTime() + waitTime.toNanos();
        result.whenComplete((done, failure) -> {
            if (result.isCancelled()) {
                cancelled();
            }
        });
        acquireNext();
    }

    CompletableFuture<HeldLocks> result() {
        return result;
    }

    private void acquireNext() {
        CompletableFuture<LockHandle> next;
        synchronized (this) {
            if (result.isDone()) {
                return;
            }
            String key = keys.get(held.size());
            Duration remaining = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            try {
                next = lockManager.acquireAsync(requests.apply(key).waitTime(remaining).build());
            } catch (RuntimeException e) {
                fail(e);
                return;
            }
            inFlight = next;
        }
        next.whenComplete(this::acquired);
    }

    private void acquired(LockHandle handle, Throwable failure) {
        boolean complete;
        synchronized (this) {
            if (result.isDone()) {
                // Cancelled meanwhile: a key taken now has no one to release it but us.
                if (handle != null) {
                    LockAspectSupport.releaseAll(List.of(handle));
                }
                return;
            }
            if (failure != null) {
                fail(failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure);
                return;
            }
            held.add(handle);
            complete = held.size() == keys.size();
        }
        if (!complete) {
            acquireNext();
            return;
        }
        // Bound to no thread yet: the method may run on this dlock thread or, when the result completes before anyone
        // looks, on the subscriber's. Whoever runs it binds the locks (ReactorLocks).
        List<LockHandle> all;
        synchronized (this) {
            all = List.copyOf(held);
        }
        result.complete(new HeldLocks(all));
    }

    /** Called holding this: releases what was taken and fails the result. */
    private void fail(Throwable failure) {
        LockAspectSupport.releaseAfterFailure(held, failure);
        held.clear();
        result.completeExceptionally(failure);
    }

    private void cancelled() {
        CompletableFuture<LockHandle> pending;
        List<LockHandle> taken;
        synchronized (this) {
            pending = inFlight;
            taken = List.copyOf(held);
            held.clear();
        }
        if (pending != null) {
            // The acquisition gives up; if it already took its key, acquired() above releases it.
            pending.cancel(false);
        }
        RuntimeException problem = LockAspectSupport.releaseAll(taken);
        if (problem != null) {
            log.warn("dlock: releasing the locks of a cancelled acquisition failed", problem);
        }
    }
}
