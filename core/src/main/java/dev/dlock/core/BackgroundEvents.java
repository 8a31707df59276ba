package dev.dlock.core;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the listeners what the watchdog and the store's own callbacks found (renewals, lost leases) on a thread of its
 * own, in the order found. A listener that blocks there (an alert sent synchronously, a lost handle closed from the
 * listener) then holds up no renewal, only the events after its own; on the watchdog's threads it would have held up
 * every lease of the store, and let them run out. The thread is made on first use and goes after a while idle.
 */
final class BackgroundEvents {

    private static final Logger log = LoggerFactory.getLogger(BackgroundEvents.class);
    /** How long {@link #close()} waits for the events queued before it. */
    static final long CLOSE_WAIT_MILLIS = 2_000;

    /** Made without listeners too, for the holders' loss reactions; creates its thread only when first used. */
    private final ThreadPoolExecutor thread;
    /** False without listeners: the listeners' events are no-ops, run where they happen. */
    private final boolean listening;
    /** The events thread alive now, if any: a listener closing the manager from it must not wait for itself. */
    private volatile Thread current;

    BackgroundEvents(boolean listening, String threadName) {
        this.listening = listening;
        // At most one thread, made when an event comes and no thread is alive: the events run one at a time, in order.
        thread = new ThreadPoolExecutor(0, 1, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), task -> {
            Thread events = new Thread(task, threadName);
            events.setDaemon(true);
            current = events;
            return events;
        });
    }

    /** Whether the calling thread is the events thread: a listener's call. */
    boolean onEventsThread() {
        return Thread.currentThread() == current;
    }

    /** Runs {@code event} (a call of the listeners, which never throws) on the events thread; after {@link #close()}, here. */
    void tell(Runnable event) {
        if (!listening) {
            event.run();
            return;
        }
        run(event);
    }

    /**
     * Runs a holder's loss reaction ({@link LossReaction}) on the events thread, after the events queued before it (the
     * loss's own come after it: stopping the work waits for no listener); after {@link #close()}, here.
     */
    void stopWork(Runnable reaction) {
        run(reaction);
    }

    private void run(Runnable event) {
        try {
            thread.execute(event);
        } catch (RejectedExecutionException closed) {
            event.run();
        }
    }

    /**
     * Lets the events queued so far reach the listeners, waiting up to {@value #CLOSE_WAIT_MILLIS} ms for them (not when
     * a listener closes the manager from the events thread: they come after it returns).
     */
    void close() {
        thread.shutdown();
        if (onEventsThread()) {
            return;
        }
        try {
            if (!thread.awaitTermination(CLOSE_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                log.warn("dlock: a listener is still busy with an event {} ms after the lock manager closed; the events after "
                        + "it are told when it returns", CLOSE_WAIT_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
