package dev.dlock.core;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads of a manager's asynchronous acquisitions: a bounded pool for store calls (which block
 * on the store's client) and one timer thread for pauses and deadlines, which never calls the store.
 * Callers' threads only start acquisitions and receive their results.
 */
final class AsyncRuntime implements Executor {

    /** Store calls of different keys in flight at once; more queue (a key has one call in flight at most). */
    private static final int STORE_THREADS = 64;

    private final ThreadPoolExecutor storeCalls;
    private final ScheduledThreadPoolExecutor timer;
    private final Set<AsyncAcquisition> pending = ConcurrentHashMap.newKeySet();

    AsyncRuntime() {
        storeCalls = new ThreadPoolExecutor(STORE_THREADS, STORE_THREADS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                daemons("dlock-async-"));
        storeCalls.allowCoreThreadTimeOut(true);
        timer = new ScheduledThreadPoolExecutor(1, daemons("dlock-async-timer-"));
        timer.setRemoveOnCancelPolicy(true);
    }

    /** Runs a step of an acquisition (a store call) on a pool thread. */
    @Override
    public void execute(Runnable step) {
        storeCalls.execute(step);
    }

    /** Runs {@code action} on the timer thread after {@code nanos}; it must not call the store. */
    ScheduledFuture<?> schedule(Runnable action, long nanos) {
        return timer.schedule(action, Math.max(0, nanos), TimeUnit.NANOSECONDS);
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
        timer.shutdownNow();
        storeCalls.shutdown();
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
