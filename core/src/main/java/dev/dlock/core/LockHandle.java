package dev.dlock.core;

import java.time.Duration;

/**
 * One acquisition of a lock. Closing it releases that acquisition: the outermost one of a thread
 * releases the key in the store. Any thread that has the handle may close it; a handle can be
 * closed once: a second {@link #close()} throws {@link IllegalStateException} and releases nothing, since two
 * code paths that each think they release the lock are a bug worth seeing. (The store release that the first
 * close makes is itself retried on failure: that is the engine's business, not a second close.)
 */
public interface LockHandle extends AutoCloseable {

    /** The lock's static name (the metrics tag). */
    String lockName();

    /** The logical key that is locked. */
    String key();

    /**
     * A number larger than every fencing token issued before for this key; pass it to the resources you guard.
     *
     * <p>A store may issue it only when first asked (Redis, for exclusive locks): the first call then costs one round
     * trip, owner-checked in the store, and later calls answer the same token. Ask while the lock is held. A request
     * that said the holder reads its token ({@link LockRequest.Builder#readsFencingToken}) got it with the acquisition:
     * no round trip here.
     *
     * @throws UnsupportedOperationException when the store issues no fencing tokens (memcached; docs/stores.md)
     * @throws IllegalStateException when the lock was released (or passed to the next holder in this JVM) before its
     *         token was issued: no token is issued after the hold ended
     * @throws LockLostException when the lease was lost before its token was issued (the store no longer holds the key
     *         for this holder); the loss is reported as any lost lease is
     * @throws LockBackendException when the store could not be asked; the lock stays held, and the next call asks again
     */
    long fencingToken();

    /**
     * True while the store cannot have let the key go: not released, not lost, and within the lease
     * counted from the last write the store confirmed (the acquire, or the last renewal answered).
     */
    boolean isHeld();

    /** The lease's current state; a held lease whose expiry passed without a confirmed renewal reads {@link LockState#LOST}. */
    LockState state();

    /**
     * Extends a fixed lease: the store keeps the key for {@code leaseTime} from now (ShedLock's {@code extend}, Spring
     * Integration's {@code renewLock}), longer or shorter than what was left. One owner-checked store call starts a new
     * term of the lease with an owner token of its own in the store, so no command sent for an earlier term (a late
     * renewal or release, a retried acquisition) can change it, and the extension, should it land late, cannot revive
     * the lease nor change a later holder's. {@link #isHeld()} counts the new term from when the extension was sent.
     * The acquisition's {@code lockAtLeastFor} stays as it was (see {@link #extend(Duration, Duration)}).
     *
     * <p>A watchdog-managed lease is renewed for as long as it is held already, and one the store keeps by its session
     * (ZooKeeper) lives with it: for those nothing is sent, and only the checks below apply. A fixed lease on ZooKeeper
     * is extended by its holder's backend, which ends it.
     *
     * @throws IllegalArgumentException when {@code leaseTime} is shorter than {@link LockRequest#MIN_LEASE_TIME}
     * @throws LockLostException when the lease was lost or had run out: nothing is extended, and the loss is reported
     *         as any lost lease is (its release still frees what is left)
     * @throws IllegalStateException when this handle was closed
     * @throws UnsupportedOperationException when the store cannot extend a lease; nothing was sent
     * @throws LockBackendException when the store could not be told after repeating the call: the outcome is unknown,
     *         {@link #isHeld()} counts the lease until the earlier of its old and new ends, and the next extension,
     *         fencing token or release settles it
     */
    void extend(Duration leaseTime);

    /**
     * {@link #extend(Duration)} with a new {@code lockAtLeastFor}, counted from now: a release before it ends keeps the
     * key until then (null or zero: a release frees it at once), as ShedLock's {@code extend(lockAtMostFor,
     * lockAtLeastFor)} does.
     *
     * @throws IllegalArgumentException also when {@code lockAtLeastFor} exceeds {@code leaseTime}, or the store keeps
     *         leases by its session
     */
    void extend(Duration leaseTime, Duration lockAtLeastFor);

    /**
     * Stops the work when the lease is lost: runs {@code stop} once, on the engine's events thread, as soon as the lease
     * is known lost — a renewal or the store's session found it, an operator forced it, the manager shut down — while the
     * returned reaction is armed; at once (on that thread) when it is lost already. Never after a clean release: closing
     * this handle disarms it first. Meant for cancelling asynchronous work ({@code future.cancel}, a subscription's
     * {@code dispose}, a coroutine's {@code cancel}); {@code stop} must be quick, and what it throws is logged. Stopping
     * is cooperative and late by nature: the store may have let the key go before the loss was known, so a fencing token
     * stays the only guarantee that a stale holder's write is refused (docs/fencing.md).
     *
     * @throws IllegalStateException when this handle was closed
     */
    LossReaction onLeaseLost(Runnable stop);

    /**
     * Interrupts the calling thread when the lease is lost, as {@link #onLeaseLost} runs a reaction: for a section that
     * blocks in {@code Thread.sleep}, a {@code BlockingQueue}, an interruptible channel or a JDBC driver that honours
     * interrupts. No interrupt lands after the reaction is closed (closing the handle, or
     * {@link #detachFromThread()}, closes it), and one it made is cleared when it is closed on this thread, so the
     * thread releases and returns to its pool uninterrupted; the release still reports the loss.
     * {@link LockRequest.Builder#stopWorkOnLeaseLost} arms this for a blocking acquisition.
     *
     * @throws IllegalStateException when this handle was closed
     */
    LossReaction interruptOnLeaseLost();

    /**
     * Unbinds the lock from the thread that acquired it, so it can be released later by whichever
     * thread finishes the work (for example when a {@code CompletableFuture} completes). After this,
     * the acquiring thread no longer re-enters the lock by asking for the key again. A re-entrant
     * acquisition (the thread already held the key through an outer handle) stays bound to the
     * thread: detaching it only lets another thread close it, and the outer holder keeps the key. An
     * {@link #interruptOnLeaseLost()} armed through this handle is closed: the work leaves the thread.
     */
    LockHandle detachFromThread();

    /**
     * Binds the lock to the calling thread, so that it re-enters the lock by asking for the key again:
     * the counterpart of {@link #detachFromThread()}, for work that continues on another thread than the
     * one that acquired (an asynchronous acquisition completes bound to no thread). A re-entrant
     * acquisition stays with its outer holder's thread.
     */
    LockHandle attachToCurrentThread();

    /**
     * Releases this acquisition.
     *
     * @throws LockLostException if the lease was lost meanwhile and the policy is {@link LeaseLostPolicy#THROW}
     * @throws LockBackendException if the store could not be told after retrying on fresh connections: the
     *         outcome is unknown (the lease may have been lost before), the key is no longer renewed and expires
     * @throws IllegalStateException if the handle was already closed; the second close releases nothing
     */
    @Override
    void close();
}
