package dev.dlock.core;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads of a manager's asynchronous acquisitions: a bounded pool for store calls (which block
 * on the store's client) and one timer thread for pauses and deadlines, which never calls the store.
 * Callers' threads only start acquisitions and receive their results. A model checker gives it threads of its own
 * ({@link #AsyncRuntime(Executor, Timer, Runnable)}), which it controls.
 */
final class AsyncRuntime implements Executor {

    /** Store calls of different keys in flight at once; more queue (a key has one call in flight at most). */
    private static final int STORE_THREADS = 64;

    /** Runs an action after a pause, on a thread that never calls the store. */
    interface Timer {
        Future<?> schedule(Runnable action, long nanos);
    }

    private final Executor storeCalls;
    private final Timer timer;
    private final Runnable stopThreads;
    private final Set<AsyncAcquisition> pending = ConcurrentHashMap.newKeySet();

    /** The runtime of a manager: a pool of daemon threads for store calls and one timer thread. */
    static AsyncRuntime withOwnThreads() {
        ThreadPoolExecutor storeCalls = new ThreadPoolExecutor(STORE_THREADS, STORE_THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), daemons("dlock-async-"));
        storeCalls.allowCoreThreadTimeOut(true);
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, daemons("dlock-async-timer-"));
        timer.setRemoveOnCancelPolicy(true);
        return new AsyncRuntime(storeCalls, (action, nanos) -> timer.schedule(action, nanos, TimeUnit.NANOSECONDS), () -> {
            timer.shutdownNow();
            storeCalls.shutdown();
        });
    }

    /** A runtime on the given threads; {@code stopThreads} runs once at {@link #close()}. */
    AsyncRuntime(Executor storeCalls, Timer timer, Runnable stopThreads) {
        this.storeCalls = storeCalls;
        this.timer = timer;
        this.stopThreads = stopThreads;
    }

    /** Runs a step of an acquisition (a store call) on a pool thread. */
    @Override
    public void execute(Runnable step) {
        storeCalls.execute(step);
    }

    /** Runs {@code action} on the timer thread after {@code nanos}; it must not call the store. */
    Future<?> schedule(Runnable action, long nanos) {
        return timer.schedule(action, Math.max(0, nanos));
    }

    void track(AsyncAcquisition acquisition) {
        pending.add(acquisition);
    }

    void untrack(AsyncAcquisition acquisition) {
        pending.remove(acquisition);
    }

    /** Fails every acquisition still waiting and stops the threads once their current step is done. */
    void close() {
        for (AsyncAcquisition acquisition : pending) {
            acquisition.managerClosed();
        }
        stopThreads.run();
    }

    /** A manager's runtime: made with threads of its own on first use, unless a model checker's was given before. */
    static final class OnFirstUse {
        private final Object lock = new Object();
        private volatile AsyncRuntime runtime;

        /** The runtime, made now when none was. */
        AsyncRuntime get() {
            AsyncRuntime made = runtime;
            if (made == null) {
                synchronized (lock) {
                    made = runtime;
                    if (made == null) {
                        made = withOwnThreads();
                        runtime = made;
                    }
                }
            }
            return made;
        }

        /** Uses {@code given} (a model checker's threads); before the first {@link #get()}. */
        void use(AsyncRuntime given) {
            synchronized (lock) {
                if (runtime != null) {
                    throw new IllegalStateException("the asynchronous runtime is already in use");
                }
                runtime = given;
            }
        }

        /** Closes the runtime if one was made or given. */
        void closeIfMade() {
            AsyncRuntime made = runtime;
            if (made != null) {
                made.close();
            }
        }
    }

    private static ThreadFactory daemons(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return work -> {
            Thread thread = new Thread(work, prefix + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }
}
