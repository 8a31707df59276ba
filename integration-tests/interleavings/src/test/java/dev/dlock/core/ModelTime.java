package dev.dlock.core;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Time and dlock's own threads, for a model checker, under which {@code System.nanoTime()} stands still (so no timed
 * wait would ever time out). Time flows through short waits: a timed wait of a key gate, or a timer of an asynchronous
 * acquisition, due within {@link #SHORT_NANOS} ends at once, as if it timed out. Longer ones (a lease's length) end by a
 * signal, or when the model moves time past them ({@link #passes}).
 * The asynchronous acquisitions' pool has no thread of its own: a step is queued until a model thread runs it
 * ({@link #runStepsUntil}), as a pool thread would.
 */
final class ModelTime implements Executor, AsyncRuntime.Timer, KeyGate.TimedWait {

    /** Far below the model's leases, far above the engine's slack past an expiry. */
    static final long SHORT_NANOS = 1_000_000_000;

    /** Nanoseconds since the model began; moved only by {@link #passes}, short waits aside. */
    private volatile long now;
    private final ReentrantLock stepsLock = new ReentrantLock();
    private final Condition stepsOrDone = stepsLock.newCondition();
    private final Deque<Runnable> steps = new ArrayDeque<>();
    private final List<Timer> timers = new ArrayList<>();
    private final List<TimedWait> timedWaits = new CopyOnWriteArrayList<>();

    private record Timer(long dueNanos, FutureTask<?> action) {
    }

    private record TimedWait(ReentrantLock lock, Condition condition, long dueNanos) {
    }

    /** An asynchronous runtime on the model's threads and time. */
    AsyncRuntime asyncRuntime() {
        // Its close (the manager's) fails the acquisitions still waiting without a step: their callers look again.
        return new AsyncRuntime(this, this, this::wakeStepRunners);
    }

    /** Wakes the model threads waiting in {@link #runStepsUntil} to check whether what they wait for is done. */
    private void wakeStepRunners() {
        stepsLock.lock();
        try {
            stepsOrDone.signalAll();
        } finally {
            stepsLock.unlock();
        }
    }

    /**
     * Time moves on by {@code nanos} (once per model): every timed wait and timer due by then ends, in no set order
     * (a real clock would end them in order of due time; the engine takes any order, as each checks again).
     */
    void passes(long nanos) {
        long moved = now + nanos;
        now = moved;
        for (TimedWait wait : timedWaits) {
            if (wait.dueNanos() <= moved) {
                timedWaits.remove(wait);
                wait.lock().lock();
                try {
                    wait.condition().signalAll();
                } finally {
                    wait.lock().unlock();
                }
            }
        }
        stepsLock.lock();
        try {
            timers.removeIf(timer -> timer.dueNanos() <= moved && steps.add(timer.action()));
            stepsOrDone.signalAll();
        } finally {
            stepsLock.unlock();
        }
    }

    /** A key gate's timed wait, by the model's time: ends by a signal, or when time passes its due moment. */
    @Override
    public long awaitNanos(ReentrantLock lock, Condition condition, long nanos) throws InterruptedException {
        long due = now + nanos;
        if (nanos <= SHORT_NANOS) {
            return 0;
        }
        // Registered under the gate's lock: passes() takes that lock to signal, so it cannot slip in before await().
        TimedWait wait = new TimedWait(lock, condition, due);
        timedWaits.add(wait);
        try {
            condition.await();
        } finally {
            timedWaits.remove(wait);
        }
        return due - now;
    }

    @Override
    public Future<?> schedule(Runnable action, long nanos) {
        FutureTask<?> task = new FutureTask<>(action, null);
        long due = now + nanos;
        stepsLock.lock();
        try {
            if (nanos <= SHORT_NANOS) {
                steps.addLast(task);
                stepsOrDone.signalAll();
            } else {
                timers.add(new Timer(due, task));
            }
        } finally {
            stepsLock.unlock();
        }
        return task;
    }

    @Override
    public void execute(Runnable step) {
        stepsLock.lock();
        try {
            steps.addLast(step);
            stepsOrDone.signalAll();
        } finally {
            stepsLock.unlock();
        }
    }

    /**
     * Runs queued steps (anyone's) on the calling thread until {@code done}, standing in for dlock's pool; waits while
     * nothing is queued (a wait that never ends is a hang, which the model checker reports).
     */
    void runStepsUntil(BooleanSupplier done) {
        while (true) {
            Runnable next;
            stepsLock.lock();
            try {
                while (steps.isEmpty() && !done.getAsBoolean()) {
                    stepsOrDone.awaitUninterruptibly();
                }
                if (steps.isEmpty()) {
                    return;
                }
                next = steps.pollFirst();
            } finally {
                stepsLock.unlock();
            }
            next.run();
            stepsLock.lock();
            try {
                // The step may have ended another caller's acquisition: that caller waits for this signal.
                stepsOrDone.signalAll();
            } finally {
                stepsLock.unlock();
            }
        }
    }
}
