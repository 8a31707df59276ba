package dev.dlock.redis;

import java.util.List;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.UnifiedJedis;

/**
 * Release channels over ONE classic pub/sub connection, owned by one daemon thread.
 *
 * <p>The connection always listens on a control channel, because Jedis cannot hold a pub/sub
 * connection without a channel. When the connection is lost every channel is reported lost, the
 * thread reconnects with a bounded backoff and subscribes every wanted channel again.
 */
final class ClassicPubSubTransport implements PubSubTransport {

    private static final Logger log = LoggerFactory.getLogger(ClassicPubSubTransport.class);

    private final UnifiedJedis client;
    private final String controlChannel;
    private final PubSubReleaseNotices notices;
    private final Object monitor;

    /** Guarded by {@link #monitor}. */
    private Connection live;
    private Thread thread;

    /** Carries the channels of {@code notices} over a pub/sub connection of {@code client}, which also listens on {@code controlChannel}. */
    ClassicPubSubTransport(UnifiedJedis client, String controlChannel, PubSubReleaseNotices notices) {
        this.client = client;
        this.controlChannel = controlChannel;
        this.notices = notices;
        this.monitor = notices.monitor();
    }

    /** Subscribes {@code channel} on the live connection; the first call starts the subscriber thread. */
    @Override
    public void channelWanted(String channel) {
        if (thread == null) {
            thread = NoticeThreads.start("dlock-redis-release-notices", this::runSubscriber);
        }
        if (live != null) {
            Connection connection = live;
            connection.send(() -> connection.subscribe(channel));
        }
    }

    /** Unsubscribes {@code channel} on the live connection. */
    @Override
    public void channelUnwanted(String channel) {
        if (live != null) {
            Connection connection = live;
            connection.send(() -> connection.unsubscribe(channel));
        }
    }

    /** Unsubscribes everything, which ends the subscriber's read loop; waits a bounded time for the thread to end. */
    @Override
    public void close() {
        Thread subscriberThread;
        synchronized (monitor) {
            if (live != null) {
                live.send(live::unsubscribe);
            }
            subscriberThread = thread;
        }
        NoticeThreads.awaitEnd(subscriberThread);
    }

    private void runSubscriber() {
        ReconnectBackoff backoff = new ReconnectBackoff();
        while (!notices.isClosed()) {
            Connection connection = new Connection();
            try {
                // Blocks until every channel is unsubscribed (close) or the connection fails.
                client.subscribe(connection, controlChannel);
            } catch (Throwable e) {
                if (!notices.isClosed()) {
                    log.warn("Release notice connection failed, reconnecting in {} ms: {}", backoff.millis(), e.toString());
                }
            } finally {
                connectionEnded(connection);
            }
            if (notices.isClosed()) {
                break;
            }
            if (connection.wasLive) {
                backoff.reset();
            }
            awaitBackoff(backoff.next());
        }
        log.debug("Release notice subscriber stopped");
    }

    /** Sleeps for the backoff on the monitor that closing notifies, so closing never waits for a backoff to end. */
    private void awaitBackoff(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        synchronized (monitor) {
            long remaining;
            while (!notices.isClosed() && (remaining = deadline - System.nanoTime()) > 0) {
                notices.awaitNotified(remaining);
            }
        }
    }

    /** Called on the subscriber thread when the server confirmed the control channel on a new connection. */
    private void connectionEstablished(Connection connection) {
        synchronized (monitor) {
            if (notices.isClosed()) {
                connection.send(connection::unsubscribe);
                return;
            }
            connection.wasLive = true;
            live = connection;
            String[] wanted = notices.wantedChannels().toArray(new String[0]);
            if (wanted.length > 0) {
                connection.send(() -> connection.subscribe(wanted));
            }
        }
        log.debug("Release notice connection established");
    }

    private void connectionEnded(Connection connection) {
        List<String> lost;
        synchronized (monitor) {
            if (live == connection) {
                live = null;
            }
            lost = notices.wantedChannels();
        }
        notices.channelsLost(lost, "connection lost");
    }

    /** The callbacks of one pub/sub connection; a new one per reconnect. Callbacks never throw into Jedis. */
    private final class Connection extends JedisPubSub {
        boolean wasLive;

        /** Runs a write (SUBSCRIBE/UNSUBSCRIBE) on this connection; callers hold the monitor. */
        void send(Runnable write) {
            try {
                write.run();
            } catch (RuntimeException e) {
                // The reader thread sees the same failure and reconnects, resubscribing what is wanted.
                log.debug("Write to the release notice connection failed: {}", e.toString());
            }
        }

        @Override
        public void onSubscribe(String channel, int subscribedChannels) {
            try {
                if (channel.equals(controlChannel)) {
                    connectionEstablished(this);
                } else {
                    notices.channelConfirmed(channel);
                }
            } catch (Throwable e) {
                log.warn("Handling SUBSCRIBE confirmation of '{}' failed", channel, e);
            }
        }

        @Override
        public void onUnsubscribe(String channel, int subscribedChannels) {
            try {
                if (!channel.equals(controlChannel)) {
                    notices.channelUnsubscribed(channel);
                }
            } catch (Throwable e) {
                log.warn("Handling UNSUBSCRIBE confirmation of '{}' failed", channel, e);
            }
        }

        @Override
        public void onMessage(String channel, String message) {
            try {
                if (!channel.equals(controlChannel)) {
                    notices.messageReceived(channel);
                }
            } catch (Throwable e) {
                log.warn("Handling a message on '{}' failed", channel, e);
            }
        }
    }
}
