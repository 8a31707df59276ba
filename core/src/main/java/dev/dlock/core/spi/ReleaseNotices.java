package dev.dlock.core.spi;

import java.time.Duration;

/**
 * Optional ability ({@link BackendCapabilities#releaseNotices()}): pushes "key released" notices to waiters in this JVM,
 * through as few store connections as the store allows.
 */
public interface ReleaseNotices {

    /**
     * Starts listening for releases of {@code key}; {@code onRelease} runs on the backend's notice
     * thread, must be fast and must not block. {@code onReconnect}-style gaps are reported through
     * {@code onRelease} too: after a reconnect every listener is called once, because notices may
     * have been missed meanwhile.
     */
    Subscription subscribe(String key, Runnable onRelease);

    /** One listener's interest in one key. */
    interface Subscription extends AutoCloseable {

        /** Waits until notices for the key are flowing; false when they are not within {@code timeout}. */
        boolean awaitActive(Duration timeout) throws InterruptedException;

        /** True while notices for the key are delivered (subscribed and connected). */
        boolean isActive();

        /** Stops listening; the last subscription of a key unsubscribes it from the store. */
        @Override
        void close();
    }
}
