package dev.dlock.core;

import dev.dlock.core.spi.ReleaseNotices;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Per-key state inside one {@link LockManager} (one gate per key and {@link LockKind#family() family}):
 * a first-come-first-served local turn so that only one thread of this JVM contends in the store for a
 * key (the rest queue here in arrival order, at no cost to the store), the current leases, and the key's
 * release-notice subscription while anyone waits. An exclusive lease keeps the turn until released; a
 * shared one (read, permit) gives it back once taken, so the next local thread may take a share too.
 */
final class KeyGate {

    /** The exclusive lease (exclusive, fair or write) this JVM holds on the key; null when none. */
    volatile Lease holder;
    /** The shared leases (read, permits) this JVM holds on the key now. */
    final Set<Lease> sharedHolders = ConcurrentHashMap.newKeySet();

    /** Guarded by the manager's gate map (only changed inside compute). */
    int users;

    private final ReentrantLock turnLock = new ReentrantLock();
    /**
     * Waiters for the turn, in arrival order: a {@link SyncWaiter} thread, or the future of an
     * asynchronous acquisition. A thread keeps its place while it checks its abort condition.
     */
    private final ArrayDeque<Object> waiting = new ArrayDeque<>();
    private boolean taken;

    private ReleaseNotices.Subscription subscription;
    private Semaphore releaseSignals;
    /** Wakes the asynchronous acquisition in the store phase on a release notice; null when there is none. */
    private volatile Runnable asyncWaker;
    /** Release notices seen so far; fair waiters, who all wait in the store at once, wait for it to move. */
    private final ReentrantLock noticeLock = new ReentrantLock();
    private final Condition noticed = noticeLock.newCondition();
    private long noticeCount;

    /** The key passed from its releasing holder to the next one in this JVM, kept by the same store owner. */
    record HandOff(String owner, long fencingToken, long sentAtNanos, int streak) {
        /** The releasing holder found its lease lost: nothing was handed over. */
        static final HandOff NOT_HELD = new HandOff(null, -1, 0, 0);
    }

    /**
     * How a wait for the turn ended: the turn (with the key already handed over in the store, or not), or a refusal
     * and why. A refused waiter that a releasing holder had reserved is granted the turn all the same ({@code owned}),
     * perhaps with the key: it must give both back ({@link #giveBack}).
     */
    record Turn(LockNotAcquiredException.Reason refusal, HandOff handOff, boolean owned) {
        static final Turn OURS = new Turn(null, null, true);

        static Turn refused(LockNotAcquiredException.Reason reason) {
            return new Turn(reason, null, false);
        }
    }

    /** A thread waiting for the turn, with the lease it will ask for, so that a releasing holder can pass it the key. */
    static final class SyncWaiter {
        final Condition wakeUp;
        final long leaseMillis;
        final boolean watched;
        /** Taken out of the queue by a releasing holder that is handing the key over; answered by {@link #handOver}. */
        boolean reserved;
        boolean granted;
        HandOff handOff;

        SyncWaiter(Condition wakeUp, long leaseMillis, boolean watched) {
            this.wakeUp = wakeUp;
            this.leaseMillis = leaseMillis;
            this.watched = watched;
        }
    }

    /**
     * Waits for this JVM's turn on the key, in arrival order; {@link Turn#OURS} when it is ours, a turn with a
     * {@link HandOff} when the releasing holder passed the key on in the store, otherwise the refusal (interrupted:
     * the flag is kept). {@code abortIf} (may be null, must not throw) is checked every {@code abortCheckNanos}
     * without losing the place. The turn is not owned by a thread: whoever releases the lease gives it back with {@link #leave()}.
     */
    Turn enter(long deadlineNanos, BooleanSupplier abortIf, long abortCheckNanos, long leaseMillis, boolean watched) {
        turnLock.lock();
        try {
            if (!taken && waiting.isEmpty()) {
                taken = true;
                return Turn.OURS;
            }
            SyncWaiter me = new SyncWaiter(turnLock.newCondition(), leaseMillis, watched);
            waiting.addLast(me);
            LockNotAcquiredException.Reason refusal = null;
            try {
                while (refusal == null) {
                    if (me.granted || me.reserved) {
                        break;
                    }
                    if (!taken && waiting.peekFirst() == me) {
                        waiting.removeFirst();
                        taken = true;
                        return Turn.OURS;
                    }
                    if (abortIf != null && abortRequested(abortIf)) {
                        refusal = LockNotAcquiredException.Reason.ABORTED;
                    } else if (deadlineNanos - System.nanoTime() <= 0) {
                        refusal = LockNotAcquiredException.Reason.TIMEOUT;
                    } else {
                        long remaining = deadlineNanos - System.nanoTime();
                        me.wakeUp.awaitNanos(abortIf == null ? remaining : Math.min(remaining, abortCheckNanos));
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
    private Turn settle(SyncWaiter me, LockNotAcquiredException.Reason refusal) {
        if (me.reserved) {
            awaitHandOver(me);
        }
        if (me.granted) {
            return new Turn(refusal, me.handOff, true);
        }
        waiting.remove(me);
        signalNext();
        return Turn.refused(refusal);
    }

    /**
     * Waits, deaf to interrupts, until the releasing holder that reserved {@code me} answers: it is in the middle
     * of one store call, and the turn it passes must not be dropped. An interrupt is kept for the caller.
     */
    private static void awaitHandOver(SyncWaiter me) {
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
     * Takes the first waiter out of the queue so that the releasing holder can pass it the key, when that waiter
     * is a thread; null when nobody waits or the first is an asynchronous acquisition. The turn stays taken until
     * {@link #handOver}, which the caller must call.
     */
    SyncWaiter reserveSuccessor() {
        turnLock.lock();
        try {
            if (waiting.peekFirst() instanceof SyncWaiter first) {
                waiting.removeFirst();
                first.reserved = true;
                return first;
            }
            return null;
        } finally {
            turnLock.unlock();
        }
    }

    /** Gives the turn to the {@link #reserveSuccessor reserved} waiter, with the key handed over in the store or not (null). */
    void handOver(SyncWaiter successor, HandOff handOff) {
        turnLock.lock();
        try {
            successor.handOff = handOff;
            successor.granted = true;
            successor.reserved = false;
            successor.wakeUp.signal();
        } finally {
            turnLock.unlock();
        }
    }

    /**
     * Gives back a turn granted to a waiter that left before it could use it: the key handed over with it (if any) is
     * released in the store through {@code release}, then the turn passes to the next waiter.
     */
    void giveBack(Turn turn, Consumer<HandOff> release) {
        try {
            if (turn.handOff() != null) {
                release.accept(turn.handOff());
            }
        } finally {
            leave();
        }
    }

    /** Runs the caller's abort condition outside the gate's lock, so a slow condition never delays a release. */
    private boolean abortRequested(BooleanSupplier abortIf) {
        turnLock.unlock();
        try {
            return abortIf.getAsBoolean();
        } finally {
            turnLock.lock();
        }
    }

    /**
     * This JVM's turn on the key for an acquisition that must not block: completed at once when the
     * turn is free, otherwise when the waiters before it are done (completed under the gate's lock,
     * so dependents must run elsewhere). Give the place back with {@link #withdraw} or the turn with {@link #leave()}.
     */
    CompletableFuture<Void> enterAsync() {
        turnLock.lock();
        try {
            if (!taken && waiting.isEmpty()) {
                taken = true;
                return CompletableFuture.completedFuture(null);
            }
            CompletableFuture<Void> turn = new CompletableFuture<>();
            waiting.addLast(turn);
            return turn;
        } finally {
            turnLock.unlock();
        }
    }

    /** Takes a waiting asynchronous acquisition out of the queue; false when the turn was granted to it already. */
    boolean withdraw(CompletableFuture<Void> turn) {
        turnLock.lock();
        try {
            if (!waiting.remove(turn)) {
                return false;
            }
            signalNext();
            return true;
        } finally {
            turnLock.unlock();
        }
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
        Object next = waiting.peekFirst();
        if (next == null || taken) {
            return;
        }
        if (next instanceof SyncWaiter thread) {
            thread.wakeUp.signal();
        } else {
            // An asynchronous waiter cannot take the turn itself: it is granted here.
            waiting.removeFirst();
            taken = true;
            @SuppressWarnings("unchecked")
            CompletableFuture<Void> turn = (CompletableFuture<Void>) next;
            turn.complete(null);
        }
    }

    /** The signals raised by release notices for this key, subscribing on first use; empty when the store pushes none. */
    synchronized Optional<Semaphore> releaseSignals(Optional<ReleaseNotices> notices, String key, long maxWaitNanos)
            throws InterruptedException {
        if (notices.isEmpty()) {
            return Optional.empty();
        }
        if (subscription == null) {
            subscribe(notices.get(), key);
            subscription.awaitActive(Duration.ofNanos(Math.max(0, maxWaitNanos)));
        }
        return Optional.of(releaseSignals);
    }

    /**
     * Subscribes to the key's release notices without waiting for the subscription to be active, and
     * runs {@code waker} on every notice until {@link #stopWaking()}; false when the store pushes none.
     */
    synchronized boolean wakeOnRelease(Optional<ReleaseNotices> notices, String key, Runnable waker) {
        if (notices.isEmpty()) {
            return false;
        }
        asyncWaker = waker;
        if (subscription == null) {
            subscribe(notices.get(), key);
        }
        return true;
    }

    /** Ends {@link #wakeOnRelease}'s waking; the subscription stays while the gate has users. */
    void stopWaking() {
        asyncWaker = null;
    }

    private void subscribe(ReleaseNotices notices, String key) {
        Semaphore signals = new Semaphore(0);
        releaseSignals = signals;
        subscription = notices.subscribe(key, () -> {
            signals.release();
            countNotice();
            Runnable waker = asyncWaker;
            if (waker != null) {
                waker.run();
            }
        });
    }

    private void countNotice() {
        noticeLock.lock();
        try {
            noticeCount++;
            noticed.signalAll();
        } finally {
            noticeLock.unlock();
        }
    }

    /** How many release notices arrived so far; read before a store attempt, for {@link #awaitNotices}. */
    long noticeCount() {
        noticeLock.lock();
        try {
            return noticeCount;
        } finally {
            noticeLock.unlock();
        }
    }

    /**
     * Waits up to {@code nanos} until {@code count} release notices arrived in all: fair waiters all wait in
     * the store at once, and each asks again only once enough releases happened for its turn to come.
     */
    void awaitNotices(long count, long nanos) throws InterruptedException {
        noticeLock.lock();
        try {
            long left = nanos;
            while (noticeCount < count && left > 0) {
                left = noticed.awaitNanos(left);
            }
        } finally {
            noticeLock.unlock();
        }
    }

    /** True while release notices for the key are flowing. */
    synchronized boolean noticesActive() {
        return subscription != null && subscription.isActive();
    }

    /** Ends the key's subscription; called once the last user left the gate. */
    synchronized void closeSubscription() {
        if (subscription != null) {
            subscription.close();
            subscription = null;
        }
    }

    /** Waits up to {@code nanos} for a release notice. */
    static void awaitSignal(Semaphore signals, long nanos) throws InterruptedException {
        if (signals.tryAcquire(nanos, TimeUnit.NANOSECONDS)) {
            signals.drainPermits();
        }
    }
}
