package dev.dlock.core;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A key's local turn: first come, first served, only the thread or asynchronous acquisition whose turn it is asks the
 * store for the key; the others queue here, at no cost to the store. One per {@link KeyGate}; fair locks take no turn.
 *
 * <p><b>Owner.</b> The acquisition that got it ({@link #enter}, {@link #signalNext} or {@link #handOver}) until it
 * records an exclusive lease, which then owns it ({@code Lease.turnHeld}); a shared lease or a failed acquisition gives
 * it back at once. A lease's turn is given back once, by whoever wins {@code Lease.giveBackTurn()}: its release (which
 * may pass it on), the loss report, or a waiter that finds it lapsed ({@link #endLapsedTurn}).
 *
 * <p><b>Hand-off.</b> {@link #reserveSuccessor} sets the first waiter's {@code reserved} (the turn stays taken across
 * the holder's one store call); {@link #handOver} swaps it for {@code granted} in one step (an async waiter's future
 * completes instead). A reserved thread waits, deaf to interrupts, and takes what it was handed even if it gave up.
 * When the store answers fast, the reserved thread is woken as the call goes out and spins, yielding, until the answer
 * or a bound: waking a sleeping thread then costs about as much as the call, and would follow it.
 *
 * <p><b>Lock order.</b> A lease's token lock before its monitor and before the turn lock; the monitor and the turn lock
 * are never held together. Under the turn lock only the queue changes. Details: docs/internals/engine.md.
 */
final class LocalTurn {

    private static final long LAPSE_SLACK_NANOS = 1_000_000;

    private final KeyHolders holders;
    private final KeyGate.TimedWait timedWait;
    private final ReentrantLock turnLock = new ReentrantLock();
    /**
     * Waiters for the turn, in arrival order: threads, and asynchronous acquisitions. A thread keeps its place while it
     * checks its abort condition.
     */
    private final ArrayDeque<Waiter> waiting = new ArrayDeque<>();
    private boolean taken;
    /**
     * Until when (System.nanoTime) this JVM's waiters leave the key to other owners before asking the store: set when a
     * streak of local hand-offs ended because another owner waits, so that owner, woken by the release notice one hop
     * later than a local waiter, is not beaten to the freed key by this JVM again. Zero when not held back.
     */
    private volatile long heldBackUntilNanos;

    LocalTurn(KeyHolders holders, KeyGate.TimedWait timedWait) {
        this.holders = holders;
        this.timedWait = timedWait;
    }

    /**
     * The key passed from its releasing holder to the next one in this JVM: the store value now names {@code owner},
     * the next holder's own owner token, so nothing sent for the previous holder can change its lease.
     */
    record HandOff(String owner, long fencingToken, long sentAtNanos, int streak) {
        /** The releasing holder found its lease lost: nothing was handed over. */
        static final HandOff NOT_HELD = new HandOff(null, -1, 0, 0);
    }

    /**
     * How a wait for the turn ended: the turn (with the key already handed over in the store, or not), or a refusal
     * and why. A refused waiter that a releasing holder had reserved is granted the turn all the same ({@code owned}),
     * perhaps with the key: it must give both back.
     */
    record Turn(LockNotAcquiredException.Reason refusal, HandOff handOff, boolean owned) {
        static final Turn OURS = new Turn(null, null, true);

        static Turn refused(LockNotAcquiredException.Reason reason) {
            return new Turn(reason, null, false);
        }
    }

    /**
     * A waiter for the turn, with the lease it will ask for, so that a releasing holder can pass it the key: a thread
     * woken by {@code wakeUp}, or an asynchronous acquisition whose {@code turn} completes with the key handed over, or
     * null.
     */
    static final class Waiter {
        final Condition wakeUp;
        final CompletableFuture<HandOff> turn;
        final long leaseMillis;
        final boolean watched;
        /** The holder part of the owner token a releasing holder makes for this waiter when it passes the key on. */
        final String holder;
        /** Whether this waiter will read its fencing token: a hand-off to it then has the store issue one at once. */
        final boolean readsToken;
        /**
         * For an asynchronous waiter: reschedules its check while queued, when the turn's holder changed or the waiter
         * became first (it then watches the holder's expiry). Runs under the turn lock: it must only schedule.
         */
        Runnable onFirstOrHolderChanged;
        /** Taken out of the queue by a releasing holder that is handing the key over; answered by {@link #handOver}. */
        boolean reserved;
        /** Set by {@link #wakeWaiters}: the manager closes, and this thread leaves the queue. */
        boolean closing;
        boolean granted;
        HandOff handOff;
        /** Set with the answer by {@link #handOver}: a reserved thread spinning for it reads it without the turn lock. */
        volatile boolean answered;
        /** How long the reserved thread spins for the answer before it sleeps; 0 when it sleeps until woken with it. */
        long spinNanos;

        Waiter(Condition wakeUp, CompletableFuture<HandOff> turn, long leaseMillis, boolean watched, String holder,
               boolean readsToken) {
            this.wakeUp = wakeUp;
            this.turn = turn;
            this.leaseMillis = leaseMillis;
            this.watched = watched;
            this.holder = holder;
            this.readsToken = readsToken;
        }
    }

    /**
     * Waits for this JVM's turn on the key, in arrival order; {@link Turn#OURS} when it is ours, a turn with a
     * {@link HandOff} when the releasing holder passed the key on in the store, otherwise the refusal (interrupted:
     * the flag is kept). {@code abortIf} (may be null, must not throw) is checked every {@code abortCheckNanos}
     * without losing the place. The turn is not owned by a thread: whoever releases the lease gives it back with {@link #leave()}.
     */
    Turn enter(long deadlineNanos, BooleanSupplier abortIf, long abortCheckNanos, long leaseMillis, boolean watched,
               String holder, boolean readsToken) {
        turnLock.lock();
        try {
            if (!taken && waiting.isEmpty()) {
                taken = true;
                return Turn.OURS;
            }
            Waiter me = new Waiter(turnLock.newCondition(), null, leaseMillis, watched, holder, readsToken);
            waiting.addLast(me);
            LockNotAcquiredException.Reason refusal = null;
            try {
                while (refusal == null) {
                    if (me.granted || me.reserved) {
                        break;
                    }
                    endLapsedTurn();
                    if (!taken && waiting.peekFirst() == me) {
                        waiting.removeFirst();
                        taken = true;
                        return Turn.OURS;
                    }
                    if (me.closing) {
                        // The manager closes: the caller turns this into its "closed" failure.
                        refusal = LockNotAcquiredException.Reason.ABORTED;
                    } else if (abortIf != null && abortRequested(abortIf)) {
                        refusal = LockNotAcquiredException.Reason.ABORTED;
                    } else if (deadlineNanos - System.nanoTime() <= 0) {
                        refusal = LockNotAcquiredException.Reason.TIMEOUT;
                    } else if (abortIf != null && (me.granted || me.reserved || (!taken && waiting.peekFirst() == me))) {
                        // The abort check ran with the turn unlocked: a release's signal then found no one asleep.
                        continue;
                    } else {
                        long remaining = Math.min(deadlineNanos - System.nanoTime(), nanosUntilTurnLapses());
                        timedWait.awaitNanos(turnLock, me.wakeUp, abortIf == null ? remaining : Math.min(remaining, abortCheckNanos));
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                refusal = LockNotAcquiredException.Reason.INTERRUPTED;
            }
            return settle(me, refusal);
        } finally {
            turnLock.unlock();
        }
    }

    /**
     * Ends a wait: a waiter that a releasing holder reserved waits for that holder's single store call and takes the
     * turn it is given (also when refused meanwhile, so that nothing handed over is dropped); any other gives its
     * place back and wakes the next.
     */
    private Turn settle(Waiter me, LockNotAcquiredException.Reason refusal) {
        if (me.reserved) {
            spinForHandOver(me);
            awaitHandOver(me);
        }
        if (me.granted) {
            return new Turn(refusal, me.handOff, true);
        }
        waiting.remove(me);
        signalNext();
        nudgeFirst();
        return Turn.refused(refusal);
    }

    /**
     * Spins, without the turn lock and deaf to interrupts, until the releasing holder answers or {@code spinNanos}
     * pass. It yields rather than burns the processor: on two cores, or a virtual machine's, a busy loop can take the
     * very processor that the store's reply and the releasing thread wait for.
     */
    private void spinForHandOver(Waiter me) {
        if (me.spinNanos <= 0) {
            return;
        }
        turnLock.unlock();
        try {
            long until = System.nanoTime() + me.spinNanos;
            while (!me.answered && System.nanoTime() - until < 0) {
                Thread.yield();
            }
        } finally {
            turnLock.lock();
        }
    }

    /**
     * Waits, deaf to interrupts, until the releasing holder that reserved {@code me} answers: it is in the middle
     * of one store call, and the turn it passes must not be dropped. An interrupt is kept for the caller.
     */
    private static void awaitHandOver(Waiter me) {
        boolean interrupted = false;
        while (me.reserved) {
            me.wakeUp.awaitUninterruptibly();
            interrupted |= Thread.interrupted();
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Takes the first waiter out of the queue so that the releasing holder can pass it the key; null when nobody
     * waits. The turn stays taken until {@link #handOver}, which the caller must call. A waiting thread is woken now to
     * spin for up to {@code spinNanos} (0: it sleeps until the answer).
     */
    Waiter reserveSuccessor(long spinNanos) {
        turnLock.lock();
        try {
            Waiter first = waiting.pollFirst();
            if (first != null) {
                first.reserved = true;
                if (first.turn == null && spinNanos > 0) {
                    first.spinNanos = spinNanos;
                    first.wakeUp.signal();
                }
            }
            return first;
        } finally {
            turnLock.unlock();
        }
    }

    /** Gives the turn to the {@link #reserveSuccessor reserved} waiter, with the key handed over in the store or not (null). */
    void handOver(Waiter successor, HandOff handOff) {
        if (successor.turn != null) {
            // Completed outside the turn lock: what depends on it may call the store.
            successor.turn.complete(handOff);
            return;
        }
        turnLock.lock();
        try {
            successor.handOff = handOff;
            successor.granted = true;
            successor.reserved = false;
            successor.answered = true;
            successor.wakeUp.signal();
        } finally {
            turnLock.unlock();
        }
    }

    /**
     * Gives the turn back for the holder whose lease lapsed (lost, or past the time the store may have let it go):
     * the turn lives no longer than the lease, and the next waiter asks the store like any other owner. The old
     * handle still reports the loss at its release. True when a turn was given back.
     */
    boolean endLapsedTurn() {
        Lease current = holders.exclusive();
        if (current == null || !current.hasTurn() || !current.lapsed(System.nanoTime()) || !current.giveBackTurn()) {
            return false;
        }
        leave();
        return true;
    }

    /**
     * A lease that can lapse by its expiry alone (a fixed lease) took the turn, or its expiry moved (an extension's new
     * term): the first waiter learns when to check it, since it may have gone to sleep before.
     */
    void turnHolderSet() {
        turnLock.lock();
        try {
            nudgeFirst();
        } finally {
            turnLock.unlock();
        }
    }

    /**
     * Wakes every thread queued for the turn: the manager closes, and each leaves the queue (see {@link #enter}). One
     * that queues after this waits for its turn as usual, which comes at the end of the grace period at the latest
     * (every lease is freed then), and its acquisition fails there.
     */
    void wakeWaiters() {
        turnLock.lock();
        try {
            for (Waiter waiter : waiting) {
                if (waiter.turn == null) {
                    waiter.closing = true;
                    waiter.wakeUp.signal();
                }
            }
        } finally {
            turnLock.unlock();
        }
    }

    /** Lets the first waiter, while the turn is taken, recompute when the turn's holder may lapse. */
    private void nudgeFirst() {
        Waiter first = waiting.peekFirst();
        if (first == null || !taken) {
            return;
        }
        if (first.turn == null) {
            first.wakeUp.signal();
        } else if (first.onFirstOrHolderChanged != null) {
            first.onFirstOrHolderChanged.run();
        }
    }

    /** How long until the turn's holder may lapse by its expiry; a lease lost earlier gives the turn back itself. */
    long nanosUntilTurnLapses() {
        Lease current = holders.exclusive();
        if (current == null || current.keptBySession || !current.hasTurn()) {
            return Long.MAX_VALUE;
        }
        // Just past the expiry, so that the check after the wake-up sees it lapsed.
        return Math.max(0, current.expiresAtNanos - System.nanoTime()) + LAPSE_SLACK_NANOS;
    }

    /** Runs the caller's abort condition outside the turn lock, so a slow condition never delays a release. */
    private boolean abortRequested(BooleanSupplier abortIf) {
        turnLock.unlock();
        try {
            return abortIf.getAsBoolean();
        } finally {
            turnLock.lock();
        }
    }

    /**
     * A place in the queue for an acquisition that must not block: its turn completes at once when free, otherwise
     * when the waiters before it are done (perhaps under the turn lock, so dependents must run elsewhere), with the
     * key if a releasing holder handed it over. Give the place back with {@link #withdraw} or the turn with {@link #leave()}.
     */
    Waiter enterAsync(long leaseMillis, boolean watched, String holder, boolean readsToken, Runnable onFirstOrHolderChanged) {
        turnLock.lock();
        try {
            Waiter place = new Waiter(null, new CompletableFuture<>(), leaseMillis, watched, holder, readsToken);
            place.onFirstOrHolderChanged = onFirstOrHolderChanged;
            if (!taken && waiting.isEmpty()) {
                taken = true;
                place.turn.complete(null);
            } else {
                waiting.addLast(place);
            }
            return place;
        } finally {
            turnLock.unlock();
        }
    }

    /** Takes a waiting asynchronous acquisition out of the queue; false when the turn was granted or reserved to it already. */
    boolean withdraw(Waiter place) {
        turnLock.lock();
        try {
            if (!waiting.remove(place)) {
                return false;
            }
            signalNext();
            nudgeFirst();
            return true;
        } finally {
            turnLock.unlock();
        }
    }

    /** Holds this JVM's next store attempts on the key back until {@code untilNanos} (System.nanoTime). */
    void holdBack(long untilNanos) {
        heldBackUntilNanos = untilNanos;
    }

    /** How much longer this JVM's waiters leave the freed key to other owners, in nanoseconds; 0 when they may ask. */
    long heldBackNanos(long nowNanos) {
        long until = heldBackUntilNanos;
        return until == 0 ? 0 : Math.max(0, until - nowNanos);
    }

    /** Gives the turn back and wakes the first waiter. */
    void leave() {
        turnLock.lock();
        try {
            taken = false;
            signalNext();
        } finally {
            turnLock.unlock();
        }
    }

    private void signalNext() {
        Waiter next = waiting.peekFirst();
        if (next == null || taken) {
            return;
        }
        if (next.turn == null) {
            next.wakeUp.signal();
        } else {
            // An asynchronous waiter cannot take the turn itself: it is granted here.
            waiting.removeFirst();
            taken = true;
            next.turn.complete(null);
        }
    }
}
