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

    /**
     * The runtime of a manager: a pool of daemon threads for store calls — virtual threads when {@code virtual} (Java
     * 21+), still at most {@value #STORE_THREADS} calls at once — and one timer thread.
     */
    static AsyncRuntime withOwnThreads(boolean virtual) {
        ThreadPoolExecutor storeCalls = new ThreadPoolExecutor(STORE_THREADS, STORE_THREADS, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(), virtual ? virtualThreads("dlock-async-vt-") : daemons("dlock-async-"));
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
        private final boolean virtual;
        private volatile AsyncRuntime runtime;

        /** Makes its store-call threads virtual when {@code virtual}. */
        OnFirstUse(boolean virtual) {
            this.virtual = virtual;
        }

        /** The runtime, made now when none was. */
        AsyncRuntime get() {
            AsyncRuntime made = runtime;
            if (made == null) {
                synchronized (lock) {
                    made = runtime;
                    if (made == null) {
                        made = withOwnThreads(virtual);
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

    /**
     * A factory of virtual threads named {@code prefix} and a count, through {@code Thread.ofVirtual()} found by
     * reflection: the engine compiles for Java 17, which has none.
     *
     * @throws IllegalStateException on a Java without virtual threads (before 21)
     */
    static ThreadFactory virtualThreads(String prefix) {
        try {
            Object builder = Thread.class.getMethod("ofVirtual").invoke(null);
            Class<?> builderType = Class.forName("java.lang.Thread$Builder");
            builder = builderType.getMethod("name", String.class, long.class).invoke(builder, prefix, 1L);
            return (ThreadFactory) builderType.getMethod("factory").invoke(builder);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("dlock's asynchronous store calls cannot run on virtual threads on Java "
                    + Runtime.version().feature() + ": virtual threads need Java 21 or later", e);
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
