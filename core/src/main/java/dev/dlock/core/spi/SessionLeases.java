package dev.dlock.core.spi;

/**
 * Optional ability ({@link BackendCapabilities#sessionLeases()}): the store keeps a lease alive for as long as
 * the backend's session with it lives, so the engine sends it no renewals and learns from the backend instead when a
 * lease is gone.
 *
 * <p>A watchdog-managed acquisition reaches such a backend with {@link #UNTIL_RELEASED} as its lease:
 * the key stays taken until it is released or the session ends. An acquisition with a fixed lease
 * time passes that time, and the backend must free the key when it runs out, as any store does.
 */
public interface SessionLeases {

    /** The lease passed to {@link LockBackend#tryAcquire} for a key held until released or until the session ends. */
    long UNTIL_RELEASED = Long.MAX_VALUE;

    /**
     * Adds where the backend reports leases that are gone or can no longer be vouched for; each
     * manager built over the backend adds one, before its first acquisition.
     */
    void addLeaseLossListener(LeaseLossListener listener);

    /**
     * Whether {@link LockBackend#shorten} gives the key an end of its own: the key is held for the retired owner and
     * freed when {@code keepMillis} runs out, as a fixed lease is (the backend times it, in this JVM). Only then does the
     * engine accept {@code lockAtLeastFor}; the default, false, has it refused with an error naming the key.
     */
    default boolean endsShortenedLeases() {
        return false;
    }

    /** Receives a backend's reports of lost leases. */
    @FunctionalInterface
    interface LeaseLossListener {

        /**
         * The lease {@code owner} took on {@code key} is gone, or in doubt (session expired, connection
         * suspended). May run on any thread; must return quickly. Reports for owners no longer holding
         * the key are ignored, so a backend may report generously.
         */
        void leaseLost(String key, String owner, String reason);
    }
}
