package dev.dlock.redis;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntFunction;
import java.util.function.Predicate;

import dev.dlock.core.LockBackendException;

/**
 * Redlock's quorum fan-out: one call on several masters in parallel, each on that master's own threads. The caller
 * waits only until the answers so far decide the outcome (a quorum agrees, or can no longer agree); then
 * {@link #close} stops it: calls not started never run, and a call still busy hands its answer to a late handler (or
 * drops it). {@link RedlockBackend} decides what an outcome is and counts the {@link View}; this class only runs the
 * calls and collects the {@link Answer answers}.
 */
final class RedlockFanOut<T> {

    private final List<RedlockBackend.Node> targets;
    private final Function<RedisLockBackend, T> call;
    private final List<Answer<T>> answers;
    private final boolean[] started;
    private final List<Consumer<Answer<T>>> lateHandlers;
    /**
     * Guards the answers and the closing; a lock, not a monitor, because the caller waits on it for the masters (a
     * monitor wait pins a virtual thread to its carrier on JDK 21 to 23).
     */
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition answered = lock.newCondition();
    private boolean closed;
    private boolean skipQueued;

    RedlockFanOut(List<RedlockBackend.Node> targets, Function<RedisLockBackend, T> call) {
        this.targets = targets;
        this.call = call;
        this.answers = new ArrayList<>(Collections.nCopies(targets.size(), null));
        this.started = new boolean[targets.size()];
        this.lateHandlers = new ArrayList<>(Collections.nCopies(targets.size(), null));
    }

    void startAll() {
        for (int i = 0; i < targets.size(); i++) {
            start(i);
        }
    }

    void start(int target) {
        if (!targets.get(target).submit(() -> run(target))) {
            answer(target, new Answer<>(null, new LockBackendException("Redis master " + targets.get(target).index
                    + " is closed, or has " + RedlockBackend.QUEUED_CALLS_PER_NODE + " calls queued", null)));
        }
    }

    private void run(int target) {
        lock.lock();
        try {
            if (closed && skipQueued) {
                return;
            }
            started[target] = true;
        } finally {
            lock.unlock();
        }
        Answer<T> answer;
        try {
            answer = new Answer<>(call.apply(targets.get(target).store), null);
        } catch (RuntimeException | Error e) {
            answer = new Answer<>(null, e);
        }
        answer(target, answer);
    }

    private void answer(int target, Answer<T> answer) {
        Consumer<Answer<T>> lateHandler;
        lock.lock();
        try {
            if (!closed) {
                answers.set(target, answer);
                answered.signalAll();
                return;
            }
            lateHandler = lateHandlers.get(target);
        } finally {
            lock.unlock();
        }
        if (lateHandler != null) {
            lateHandler.accept(answer);
        }
    }

    /** Waits until every target answered, {@code decided} holds, or the deadline passed. */
    View<T> await(Predicate<View<T>> decided, long deadlineNanos) throws InterruptedException {
        lock.lock();
        try {
            while (true) {
                View<T> view = new View<>(new ArrayList<>(answers));
                long remaining = deadlineNanos - System.nanoTime();
                if (view.pending() == 0 || decided.test(view) || remaining <= 0) {
                    return view;
                }
                answered.awaitNanos(remaining);
            }
        } finally {
            lock.unlock();
        }
    }

    /** {@link #await}, going on through interrupts (it stays bounded by the deadline) and setting the flag again after. */
    View<T> awaitUninterruptibly(Predicate<View<T>> decided, long deadlineNanos) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return await(decided, deadlineNanos);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Stops collecting: calls not started yet never run, and each call still busy hands its answer
     * to {@code lateHandlerFor.apply(target)} (asked here, under this fan-out's lock); returns the
     * answers so far.
     */
    View<T> close(IntFunction<Consumer<Answer<T>>> lateHandlerFor) {
        return close(lateHandlerFor, true);
    }

    /** {@link #close(IntFunction)}; with {@code skipQueued} false, calls not started yet still run later, unheard. */
    View<T> close(IntFunction<Consumer<Answer<T>>> lateHandlerFor, boolean skipQueued) {
        lock.lock();
        try {
            if (!closed) {
                closed = true;
                this.skipQueued = skipQueued;
                for (int i = 0; i < targets.size(); i++) {
                    if (lateHandlerFor != null && started[i] && answers.get(i) == null) {
                        lateHandlers.set(i, lateHandlerFor.apply(i));
                    }
                }
            }
            return new View<>(new ArrayList<>(answers));
        } finally {
            lock.unlock();
        }
    }

    /** One master's answer, or why there is none. */
    record Answer<T>(T value, Throwable failure) {
    }

    /** The answers of a fan-out so far, one per target: null while that master is still busy. */
    record View<T>(List<Answer<T>> answers) {

        T value(int target) {
            Answer<T> answer = answers.get(target);
            return answer == null ? null : answer.value();
        }

        int pending() {
            return (int) answers.stream().filter(Objects::isNull).count();
        }

        int answered() {
            return count(value -> true);
        }

        int failed() {
            return (int) answers.stream().filter(answer -> answer != null && answer.failure() != null).count();
        }

        int count(Predicate<T> matching) {
            return (int) answers.stream()
                    .filter(answer -> answer != null && answer.failure() == null && matching.test(answer.value()))
                    .count();
        }

        Throwable firstFailure() {
            return answers.stream().filter(answer -> answer != null && answer.failure() != null)
                    .map(Answer::failure).findFirst().orElse(null);
        }

        /** The first failure that is not an unreachable master (a bug or an unexpected reply), or null. */
        Throwable unexpected() {
            return answers.stream().filter(answer -> answer != null && answer.failure() != null
                            && !(answer.failure() instanceof LockBackendException))
                    .map(Answer::failure).findFirst().orElse(null);
        }
    }
}
