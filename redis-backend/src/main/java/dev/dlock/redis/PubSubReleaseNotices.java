package dev.dlock.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.KeyListeners;
import dev.dlock.core.spi.ReleaseNotices;

/**
 * Release notices over Redis pub/sub: the registry of local listeners and of the channels they
 * want, whether the server confirmed each channel, and the "notices may have been missed" call
 * after a connection loss. A {@link PubSubTransport} decides which connection carries a channel and
 * reports back through the methods below {@link #monitor()}.
 */
final class PubSubReleaseNotices implements ReleaseNotices {

    private static final Logger log = LoggerFactory.getLogger(PubSubReleaseNotices.class);

    private final RedisKeys keys;
    /** Guards {@link #channels} and the transport's connection state; serializes every pub/sub write. */
    private final Object monitor = new Object();
    /** The state of every channel some listener wants; guarded by {@link #monitor}. */
    private final Map<String, Channel> channels = new HashMap<>();
    /** Listeners per channel: the first wants the channel from the transport, the last leaving unwants it. */
    private final KeyListeners<ListenerSubscription> listeners =
            new KeyListeners<>(monitor, this::firstListenerArrived, this::lastListenerLeft);
    private volatile boolean closed;
    /**
     * Wakes callers waiting for a channel to come up ({@code awaitActive}): a lock of its own, not the monitor, so a
     * waiting caller holds no monitor (waiting on one pins a virtual thread to its carrier on JDK 21 to 23). Signalled
     * after the state it reports changed; where both are held, it is taken after the monitor, never before.
     */
    private final ReentrantLock activationLock = new ReentrantLock();
    private final Condition activationChanged = activationLock.newCondition();
    private final PubSubTransport transport;

    /** Notices for the release channels of {@code keys}, carried by the transport {@code transportFactory} builds for them. */
    PubSubReleaseNotices(RedisKeys keys, Function<PubSubReleaseNotices, PubSubTransport> transportFactory) {
        this.keys = keys;
        this.transport = transportFactory.apply(this);
    }

    /** Adds a listener for releases of {@code key}; subscribes the key's channel if it is the first one. */
    @Override
    public Subscription subscribe(String key, Runnable onRelease) {
        if (onRelease == null) {
            throw new IllegalArgumentException("onRelease must not be null");
        }
        String name = keys.releaseChannel(key);
        synchronized (monitor) {
            if (closed) {
                throw new IllegalStateException("Release notices are closed (the RedisLockBackend was closed)");
            }
            Channel channel = channels.computeIfAbsent(name, unused -> new Channel());
            try {
                return listeners.add(new ListenerSubscription(channel, name, onRelease));
            } catch (RuntimeException | Error e) {
                if (!listeners.contains(name)) {
                    // The transport refused the first listener: nobody wants the channel.
                    channels.remove(name);
                }
                throw e;
            }
        }
    }

    /** Called holding the monitor, with the channel's state in place: the transport subscribes it. */
    private void firstListenerArrived(String name) {
        transport.channelWanted(name);
    }

    /** Called holding the monitor: the channel's state goes, and the transport unsubscribes it unless closing. */
    private void lastListenerLeft(String name) {
        Channel channel = channels.remove(name);
        if (channel != null) {
            channel.active = false;
        }
        if (!closed) {
            transport.channelUnwanted(name);
        }
    }

    /** Turns every subscription inactive for good, then stops the transport's connections and threads. */
    void close() {
        synchronized (monitor) {
            if (closed) {
                return;
            }
            closed = true;
            for (Channel channel : channels.values()) {
                channel.active = false;
            }
            // Wakes the transport's threads sleeping a backoff: closing never waits for one to end.
            monitor.notifyAll();
        }
        signalActivationChanged();
        transport.close();
    }

    /** The transport carrying the channels, for tests. */
    PubSubTransport transport() {
        return transport;
    }

    /**
     * The monitor that orders channel bookkeeping and pub/sub writes. The transport is called
     * holding it, and guards its own connection state and every SUBSCRIBE/UNSUBSCRIBE write by it,
     * so that the writes reach a connection in the order listeners came and went. {@link #close()}
     * notifies it; a transport thread that waits on it checks {@link #isClosed()}.
     */
    Object monitor() {
        return monitor;
    }

    /** True once {@link #close()} began; the transport is not called any more. */
    boolean isClosed() {
        return closed;
    }

    /** The channels some listener wants now. */
    List<String> wantedChannels() {
        synchronized (monitor) {
            return new ArrayList<>(channels.keySet());
        }
    }

    /** True while some listener wants {@code name}. */
    boolean isWanted(String name) {
        synchronized (monitor) {
            return channels.containsKey(name);
        }
    }

    /** The server confirmed {@code name}: it is active, and its listeners hear once more if notices were missed. */
    void channelConfirmed(String name) {
        boolean missed;
        synchronized (monitor) {
            Channel channel = channels.get(name);
            if (channel == null) {
                return;
            }
            channel.active = true;
            missed = channel.missedNotices;
            channel.missedNotices = false;
            monitor.notifyAll();
        }
        signalActivationChanged();
        if (missed) {
            listeners.wake(name, "reconnect");
        }
    }

    /**
     * The server confirmed an UNSUBSCRIBE of {@code name}. If a listener wants the channel, that
     * UNSUBSCRIBE was overtaken by a new listener: inactive until the SUBSCRIBE confirmation that follows.
     */
    void channelUnsubscribed(String name) {
        synchronized (monitor) {
            Channel channel = channels.get(name);
            if (channel != null) {
                channel.active = false;
            }
        }
    }

    /**
     * The channels {@code names} stopped carrying notices: marks them inactive and as having missed
     * notices, then calls their listeners outside the monitor, once per loss: waiters must stop
     * relying on notices now and poll the store instead.
     */
    void channelsLost(Collection<String> names, String why) {
        List<String> toNotify = new ArrayList<>();
        synchronized (monitor) {
            for (String name : names) {
                Channel channel = channels.get(name);
                if (channel != null) {
                    channel.active = false;
                    if (!channel.missedNotices) {
                        // Releases published meanwhile are gone; tell the listeners again once the channel is back.
                        // Failed reconnects while it is still down do not call them again.
                        channel.missedNotices = true;
                        toNotify.add(name);
                    }
                }
            }
        }
        for (String name : toNotify) {
            listeners.wake(name, why);
        }
    }

    /** A release was published on {@code name}. */
    void messageReceived(String name) {
        listeners.wake(name, "release");
    }

    /**
     * Waits on the monitor, which the caller holds, until notified or {@code nanos} passed. Ignores
     * interrupts: only {@link #close()} may stop a notice thread, and an interrupt would also
     * corrupt Jedis's read loop. Callers check {@link #isClosed()} again afterwards.
     */
    void awaitNotified(long nanos) {
        try {
            TimeUnit.NANOSECONDS.timedWait(monitor, nanos);
        } catch (InterruptedException e) {
            log.debug("Release notice thread ignores an interrupt");
        }
    }

    private void signalActivationChanged() {
        activationLock.lock();
        try {
            activationChanged.signalAll();
        } finally {
            activationLock.unlock();
        }
    }

    /** The local state of one wanted release channel: whether the server confirmed it. */
    private static final class Channel {
        volatile boolean active;
        /** Guarded by the monitor. */
        boolean missedNotices;
    }

    /** One listener's interest in one channel. */
    private final class ListenerSubscription extends KeyListeners.Listener {
        final Channel channel;

        ListenerSubscription(Channel channel, String name, Runnable onRelease) {
            super(name, onRelease);
            this.channel = channel;
        }

        @Override
        public boolean awaitActive(Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            activationLock.lock();
            try {
                while (!isActive()) {
                    long remainingNanos = deadline - System.nanoTime();
                    if (isClosed() || PubSubReleaseNotices.this.closed || remainingNanos <= 0) {
                        return false;
                    }
                    activationChanged.awaitNanos(remainingNanos);
                }
                return true;
            } finally {
                activationLock.unlock();
            }
        }

        @Override
        public boolean isActive() {
            return !isClosed() && channel.active;
        }

        @Override
        protected void closed() {
            signalActivationChanged();
        }
    }
}
