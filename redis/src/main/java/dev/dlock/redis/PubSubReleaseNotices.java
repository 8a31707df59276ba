package dev.dlock.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.ReleaseNotices;

/**
 * The listener bookkeeping shared by the classic and the sharded pub/sub notices: which channels
 * local listeners want, whether the server confirmed them, and the "notices may have been missed"
 * call after a connection loss. Subclasses only decide which connection carries a channel.
 */
abstract class PubSubReleaseNotices implements ReleaseNotices {

    private static final Logger log = LoggerFactory.getLogger(PubSubReleaseNotices.class);

    static final long INITIAL_BACKOFF_MILLIS = 50;
    static final long MAX_BACKOFF_MILLIS = 2_000;
    static final long CLOSE_TIMEOUT_MILLIS = 2_000;

    private final RedisKeys keys;

    /** Guards channels and the subclass's connection state; also serializes every write to a pub/sub connection. */
    final Object lock = new Object();
    final Map<String, Channel> channels = new HashMap<>();
    volatile boolean closed;

    PubSubReleaseNotices(RedisKeys keys) {
        this.keys = keys;
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
            Channel channel = channels.get(name);
            boolean first = channel == null;
            if (first) {
                channel = new Channel(name);
                channels.put(name, channel);
            }
            ListenerSubscription subscription = new ListenerSubscription(channel, onRelease);
            channel.subscriptions.add(subscription);
            if (first) {
                channelWanted(channel);
            }
            return subscription;
        }
    }

    /** Stops every connection and thread; waits a bounded time for them to end. */
    abstract void close();

    /** A channel got its first listener; called holding {@code lock}, never after close. */
    abstract void channelWanted(Channel channel);

    /**
     * A channel lost its last listener and is already out of {@code channels}; called holding
     * {@code lock}, never after close.
     */
    abstract void channelUnwanted(Channel channel);

    /**
     * Marks the channels inactive and as having missed notices, then calls their listeners outside
     * the lock, once per loss: waiters must stop relying on notices now and poll the store instead.
     */
    final void channelsLost(Collection<String> names, String why) {
        List<Map.Entry<String, List<ListenerSubscription>>> toNotify = new ArrayList<>();
        synchronized (lock) {
            for (String name : names) {
                Channel channel = channels.get(name);
                if (channel != null) {
                    channel.active = false;
                    if (!channel.missedNotices) {
                        // Releases published meanwhile are gone; tell the listeners again once the channel is back.
                        // Failed reconnects while it is still down do not call them again.
                        channel.missedNotices = true;
                        toNotify.add(Map.entry(name, new ArrayList<>(channel.subscriptions)));
                    }
                }
            }
        }
        for (Map.Entry<String, List<ListenerSubscription>> entry : toNotify) {
            notifyListeners(entry.getKey(), entry.getValue(), why);
        }
    }

    /** The server confirmed {@code name}: it is active, and its listeners hear once more if notices were missed. */
    final void channelConfirmed(String name) {
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
        notifyListeners(name, toNotify, "reconnect");
    }

    /** A release was published on {@code name}. */
    final void messageReceived(String name) {
        Channel channel;
        synchronized (lock) {
            channel = channels.get(name);
        }
        if (channel != null) {
            notifyListeners(name, channel.subscriptions, "release");
        }
    }

    /** Sleeps for the backoff on the monitor close() notifies, so closing never waits for a backoff to end. */
    final void awaitBackoff(long millis) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        synchronized (lock) {
            long remaining;
            while (!closed && (remaining = deadline - System.nanoTime()) > 0) {
                try {
                    TimeUnit.NANOSECONDS.timedWait(lock, remaining);
                } catch (InterruptedException e) {
                    // Only close() may stop these threads; an interrupt would also corrupt Jedis's read loop.
                    log.debug("Release notice thread ignores an interrupt");
                }
            }
        }
    }

    /**
     * Waits a bounded time for a notice thread to end. Never interrupts it: Jedis ends its read loop on
     * interrupt without draining the pending replies and hands the connection back to the pool with
     * those replies unread.
     */
    static void awaitEnd(Thread thread) {
        if (thread == null) {
            return;
        }
        try {
            thread.join(CLOSE_TIMEOUT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            log.warn("Release notice thread {} did not stop within {} ms; it is a daemon and will end with the JVM",
                    thread.getName(), CLOSE_TIMEOUT_MILLIS);
        }
    }

    /** Starts a daemon thread named {@code name}. */
    static Thread startDaemon(String name, Runnable body) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
        return thread;
    }

    private static void notifyListeners(String channelName, List<ListenerSubscription> subscriptions, String why) {
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
    static final class Channel {
        final String name;
        final List<ListenerSubscription> subscriptions = new CopyOnWriteArrayList<>();
        volatile boolean active;
        boolean missedNotices;

        Channel(String name) {
            this.name = name;
        }
    }

    /** One listener's interest in one channel. */
    final class ListenerSubscription implements Subscription {
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
                    if (closed || PubSubReleaseNotices.this.closed || remainingNanos <= 0) {
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
                    if (!PubSubReleaseNotices.this.closed) {
                        channelUnwanted(channel);
                    }
                }
                lock.notifyAll();
            }
        }
    }
}
