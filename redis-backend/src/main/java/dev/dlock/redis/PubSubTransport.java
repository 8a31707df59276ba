package dev.dlock.redis;

/**
 * The connections that carry the release channels of one {@link PubSubReleaseNotices}: they
 * subscribe the channels it wants, unsubscribe those it no longer wants, and report what the server
 * says through its methods (confirmed, unsubscribed, lost, message).
 *
 * <p>The notices call {@link #channelWanted} and {@link #channelUnwanted} holding
 * {@link PubSubReleaseNotices#monitor()}, in the order listeners come and go, and never after close.
 * A transport guards its connection state and every SUBSCRIBE/UNSUBSCRIBE write by that monitor
 * too, so the writes reach a connection in that order and never interleave.
 */
interface PubSubTransport {

    /** {@code channel} got its first listener: subscribe it, now or once a connection is up. */
    void channelWanted(String channel);

    /** {@code channel} lost its last listener and is no longer wanted: unsubscribe it if it was written. */
    void channelUnwanted(String channel);

    /**
     * Unsubscribes everything and stops every connection and thread, waiting a bounded time for
     * them; called once, without the monitor, after the notices closed and notified it.
     */
    void close();
}
