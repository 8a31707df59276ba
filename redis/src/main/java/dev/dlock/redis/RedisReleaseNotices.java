package dev.dlock.redis;

import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.UnifiedJedis;

/**
 * Release notices over ONE classic pub/sub connection per backend, owned by one daemon thread.
 *
 * <p>A channel is subscribed while at least one local listener wants it. The connection always
 * listens on a control channel, because Jedis cannot hold a pub/sub connection without a channel.
 * When the connection is lost every subscription turns inactive, the thread reconnects with a
 * bounded backoff and resubscribes, and every listener is called once since notices may have been
 * missed meanwhile.
 */
final class RedisReleaseNotices extends PubSubReleaseNotices {

    private static final Logger log = LoggerFactory.getLogger(RedisReleaseNotices.class);

    private final UnifiedJedis client;
    private final String controlChannel;

    /** Guarded by {@code lock}. */
    private Connection live;
    private Thread thread;

    RedisReleaseNotices(UnifiedJedis client, RedisKeys keys) {
        super(keys);
        this.client = client;
        this.controlChannel = keys.controlChannel();
    }

    @Override
    void channelWanted(Channel channel) {
        startThreadIfNeeded();
        if (live != null) {
            Connection connection = live;
            connection.send(() -> connection.subscribe(channel.name));
        }
    }

    @Override
    void channelUnwanted(Channel channel) {
        if (live != null) {
            Connection connection = live;
            connection.send(() -> connection.unsubscribe(channel.name));
        }
    }

    /** Unsubscribes everything and stops the subscriber thread; waits a bounded time for it to end. */
    @Override
    void close() {
        Thread subscriberThread;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            if (live != null) {
                live.send(live::unsubscribe);
            }
            for (Channel channel : channels.values()) {
                channel.active = false;
            }
            lock.notifyAll();
            subscriberThread = thread;
        }
        awaitEnd(subscriberThread);
    }

    private void startThreadIfNeeded() {
        if (thread == null) {
            thread = startDaemon("dlock-redis-release-notices", this::runSubscriber);
        }
    }

    private void runSubscriber() {
        long backoffMillis = INITIAL_BACKOFF_MILLIS;
        while (!closed) {
            Connection connection = new Connection();
            try {
                // Blocks until every channel is unsubscribed (close) or the connection fails.
                client.subscribe(connection, controlChannel);
            } catch (Throwable e) {
                if (!closed) {
                    log.warn("Release notice connection failed, reconnecting in {} ms: {}", backoffMillis, e.toString());
                }
            } finally {
                connectionEnded(connection);
            }
            if (closed) {
                break;
            }
            if (connection.wasLive) {
                backoffMillis = INITIAL_BACKOFF_MILLIS;
            }
            awaitBackoff(backoffMillis);
            backoffMillis = Math.min(backoffMillis * 2, MAX_BACKOFF_MILLIS);
        }
        log.debug("Release notice subscriber stopped");
    }

    /** Called on the subscriber thread when the server confirmed the control channel on a new connection. */
    private void connectionEstablished(Connection connection) {
        synchronized (lock) {
            if (closed) {
                connection.send(connection::unsubscribe);
                return;
            }
            connection.wasLive = true;
            live = connection;
            if (!channels.isEmpty()) {
                String[] wanted = channels.keySet().toArray(new String[0]);
                connection.send(() -> connection.subscribe(wanted));
            }
        }
        log.debug("Release notice connection established");
    }

    private void connectionEnded(Connection connection) {
        List<String> lost;
        synchronized (lock) {
            if (live == connection) {
                live = null;
            }
            lost = new ArrayList<>(channels.keySet());
        }
        channelsLost(lost, "connection lost");
    }

    private void channelUnsubscribed(String name) {
        synchronized (lock) {
            Channel channel = channels.get(name);
            if (channel != null) {
                // A stale UNSUBSCRIBE overtaken by a new listener; its SUBSCRIBE confirmation follows.
                channel.active = false;
            }
        }
    }

    /** The callbacks of one pub/sub connection; a new one per reconnect. Callbacks never throw into Jedis. */
    private final class Connection extends JedisPubSub {
        boolean wasLive;

        /** Runs a write (SUBSCRIBE/UNSUBSCRIBE) on this connection; callers hold {@code lock}. */
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
                    channelConfirmed(channel);
                }
            } catch (Throwable e) {
                log.warn("Handling SUBSCRIBE confirmation of '{}' failed", channel, e);
            }
        }

        @Override
        public void onUnsubscribe(String channel, int subscribedChannels) {
            try {
                if (!channel.equals(controlChannel)) {
                    channelUnsubscribed(channel);
                }
            } catch (Throwable e) {
                log.warn("Handling UNSUBSCRIBE confirmation of '{}' failed", channel, e);
            }
        }

        @Override
        public void onMessage(String channel, String message) {
            try {
                if (!channel.equals(controlChannel)) {
                    messageReceived(channel);
                }
            } catch (Throwable e) {
                log.warn("Handling a message on '{}' failed", channel, e);
            }
        }
    }
}
