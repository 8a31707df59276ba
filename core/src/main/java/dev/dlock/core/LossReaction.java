package dev.dlock.core;

/**
 * What a holder arranged to happen to its work when its lease is lost ({@link LockHandle#onLeaseLost},
 * {@link LockHandle#interruptOnLeaseLost}): armed until closed, it runs at most once, on the engine's events thread.
 */
public interface LossReaction extends AutoCloseable {

    /** Whether it ran: the lease was known lost while it was armed. */
    boolean fired();

    /**
     * Disarms it: from now on it never runs. Closing the handle closes it too. An interrupt it made is cleared when it is
     * closed on the interrupted thread, so that thread goes on (releases, returns to its pool) uninterrupted; the loss
     * itself is still reported by the release. Idempotent.
     */
    @Override
    void close();
}
