package dev.dlock.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.ReleaseNotices;

import redis.clients.jedis.JedisPubSub;
import redis.clients.jedis.UnifiedJedis;

/**
 * Release notices over ONE pub/sub connection per backend, owned by one daemon thread.
 *
 * <p>A channel is subscribed while at least one local listener wants it. The connection always
 * listens on a control channel, because Jedis cannot hold a pub/sub connection without a channel.
 * When the connection is lost every subscription turns inactive, the thread reconnects with a
 * bounded backoff and resubscribes, and every listener is called once since notices may have been
 * missed meanwhile.
 */
final class RedisReleaseNotices implements ReleaseNotices {

    private static final Logger log = LoggerFactory.getLogger(RedisReleaseNotices.class);

    private static final long INITIAL_BACKOFF_MILLIS = 50;
    private static final long MAX_BACKOFF_MILLIS = 2_000;
    private static final long CLOSE_TIMEOUT_MILLIS = 2_000;

    private final UnifiedJedis client;
    private final RedisKeys keys;
    private final String controlChannel;

    /** Guards channels, live and thread; also serializes every write to the pub/sub connection. */
    private final Object lock = new Object();
    private final Map<String, Channel> channels = new HashMap<>();
    private Connection live;
    private Thread thread;
    private volatile boolean closed;

    RedisReleaseNotices(UnifiedJedis client, RedisKeys keys) {
        this.client = client;
        this.keys = keys;
        this.controlChannel = keys.controlChannel();
    }

    /** Adds a listener for releases of {@code key}; subscribes the key's channel if it is the first one. */
    @Override
    public Subscription subscribe(String key, Runnable onRelease) {
        if (onRelease == null) {
            throw new IllegalArgumentException("onRelease must not be null");
        }
        String name = keys.releaseChannel(key);
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("Release notices are closed (the RedisLockBackend was closed)");
            }
            startThreadIfNeeded();
            Channel channel = channels.get(name);
            boolean first = channel == null;
            if (first) {
                channel = new Channel(name);
                channels.put(name, channel);
            }
            ListenerSubscription subscription = new ListenerSubscription(channel, onRelease);
            channel.subscriptions.add(subscription);
            if (first && live != null) {
                live.send(() -> live.subscribe(name));
            }
            return subscription;
        }
    }

    /** Unsubscribes everything and stops the subscriber thread; waits a bounded time for it to end. */
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
        if (subscriberThread == null) {
            return;
        }
        // No interrupt: Jedis ends its read loop on interrupt without draining the UNSUBSCRIBE replies and
        // hands the connection back to the client's pool with those replies unread. notifyAll() above wakes the backoff.
        try {
            subscriberThread.join(CLOSE_TIMEOUT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (subscriberThread.isAlive()) {
            log.warn("Release notice subscriber thread did not stop within {} ms; it is a daemon and will end with the JVM",
                    CLOSE_TIMEOUT_MILLIS);
        }
    }

    private void startThreadIfNeeded() {
        if (thread == null) {
            thread = new Thread(this::runSubscriber, "dlock-redis-release-notices");
            thread.setDaemon(true);
            thread.start();
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

    /** Sleeps for the backoff on the monitor close() notifies, so closing never waits for a backoff to end. */
    private void awaitBackoff(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        synchronized (lock) {
            long remaining;
            while (!closed && (remaining = deadline - System.nanoTime()) > 0) {
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, remaining);
                } catch (InterruptedException e) {
                    // Only close() may stop this thread; an interrupt would also corrupt Jedis's read loop.
                    log.debug("Release notice subscriber ignores an interrupt");
                }
            }
        }
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
        List<Map.Entry<String, List<ListenerSubscription>>> toNotify = new ArrayList<>();
        synchronized (lock) {
            if (live == connection) {
                live = null;
            }
            for (Map.Entry<String, Channel> entry : channels.entrySet()) {
                Channel channel = entry.getValue();
                channel.active = false;
                // Releases published while we were disconnected are gone; tell the listeners once we are back.
                channel.missedNotices = true;
                toNotify.add(Map.entry(entry.getKey(), new ArrayList<>(channel.subscriptions)));
            }
        }
        // Waiters must stop relying on notices now: woken, they fall back to polling the store,
        // which also tells them at once when the store itself is gone.
        for (Map.Entry<String, List<ListenerSubscription>> entry : toNotify) {
            notifyAll(entry.getKey(), entry.getValue(), "connection lost");
        }
    }

    private void channelConfirmed(String name) {
        List<ListenerSubscription> toNotify = List.of();
        synchronized (lock) {
            Channel channel = channels.get(name);
            if (channel == null) {
                return;
            }
            channel.active = true;
            if (channel.missedNotices) {
                channel.missedNotices = false;
                toNotify = new ArrayList<>(channel.subscriptions);
            }
            lock.notifyAll();
        }
        notifyAll(name, toNotify, "reconnect");
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

    private void messageReceived(String name) {
        Channel channel;
        synchronized (lock) {
            channel = channels.get(name);
        }
        if (channel != null) {
            notifyAll(name, channel.subscriptions, "release");
        }
    }

    private static void notifyAll(String channelName, List<ListenerSubscription> subscriptions, String why) {
        for (ListenerSubscription subscription : subscriptions) {
            if (subscription.closed) {
                continue;
            }
            try {
                subscription.onRelease.run();
            } catch (Throwable e) {
                log.warn("Release listener for channel '{}' threw on {} notice; ignored", channelName, why, e);
            }
        }
    }

    /** The local state of one release channel: its listeners and whether the server confirmed it. */
    private static final class Channel {
        final String name;
        final List<ListenerSubscription> subscriptions = new CopyOnWriteArrayList<>();
        volatile boolean active;
        boolean missedNotices;

        Channel(String name) {
            this.name = name;
        }
    }

    /** One listener's interest in one channel. */
    private final class ListenerSubscription implements Subscription {
        final Channel channel;
        final Runnable onRelease;
        volatile boolean closed;

        ListenerSubscription(Channel channel, Runnable onRelease) {
            this.channel = channel;
            this.onRelease = onRelease;
        }

        @Override
        public boolean awaitActive(Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            synchronized (lock) {
                while (!isActive()) {
                    long remainingNanos = deadline - System.nanoTime();
                    if (closed || RedisReleaseNotices.this.closed || remainingNanos <= 0) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(lock, remainingNanos);
                }
                return true;
            }
        }

        @Override
        public boolean isActive() {
            return !closed && channel.active;
        }

        @Override
        public void close() {
            synchronized (lock) {
                if (closed) {
                    return;
                }
                closed = true;
                channel.subscriptions.remove(this);
                if (channel.subscriptions.isEmpty() && channels.get(channel.name) == channel) {
                    channels.remove(channel.name);
                    channel.active = false;
                    if (live != null && !RedisReleaseNotices.this.closed) {
                        Connection connection = live;
                        connection.send(() -> connection.unsubscribe(channel.name));
                    }
                }
                lock.notifyAll();
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
