package dev.dlock.core.spi;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local listeners of a {@link ReleaseNotices}, per key (whatever the store subscribes by: a lock key, a
 * channel, a node path), for store implementations. Thread-safe. The first listener of a key runs
 * {@code firstArrived} (subscribe in the store) and the last one leaving runs {@code lastLeft} (unsubscribe),
 * both holding one lock that also guards adding and removing: a listener that arrives while the last one leaves
 * waits until the key is unsubscribed and then subscribes it again, so the store's subscribe and unsubscribe calls
 * of a key come in the order listeners came and went. Notices are delivered without that lock.
 *
 * @param <L> the store's listener (subscription) type
 */
public final class KeyListeners<L extends KeyListeners.Listener> {

    private static final Logger log = LoggerFactory.getLogger(KeyListeners.class);
    private static final Consumer<String> NOTHING = key -> { };

    private final Object lock;
    private final Consumer<String> firstArrived;
    private final Consumer<String> lastLeft;
    /** Changed only holding {@link #lock}; read without it. A key is present exactly while it has a listener. */
    private final ConcurrentHashMap<String, List<L>> byKey = new ConcurrentHashMap<>();

    /** Listeners of a store that subscribes nothing per key (it watches or polls whatever {@link #keys()} holds). */
    public KeyListeners() {
        this(new Object(), NOTHING, NOTHING);
    }

    /**
     * Listeners whose first of a key runs {@code firstArrived} and whose last of a key runs {@code lastLeft}, each
     * with the key and holding {@code lock}: pass the store's own monitor when its subscription state is guarded by
     * it. The callbacks must not block for long; they must not call back into this object from another thread.
     */
    public KeyListeners(Object lock, Consumer<String> firstArrived, Consumer<String> lastLeft) {
        this.lock = Objects.requireNonNull(lock, "lock");
        this.firstArrived = Objects.requireNonNull(firstArrived, "firstArrived");
        this.lastLeft = Objects.requireNonNull(lastLeft, "lastLeft");
    }

    /**
     * Registers {@code listener} under its key and returns it; the key's first listener runs {@code firstArrived}.
     * When that throws, nothing stays registered and the exception propagates.
     */
    public L add(L listener) {
        Listener registered = listener;
        synchronized (lock) {
            if (registered.registry != null) {
                throw new IllegalStateException("The listener for key '" + listener.key() + "' is already registered");
            }
            if (listener.isClosed()) {
                throw new IllegalStateException("The listener for key '" + listener.key() + "' is closed");
            }
            List<L> listeners = byKey.get(listener.key());
            boolean first = listeners == null;
            if (first) {
                listeners = new CopyOnWriteArrayList<>();
                byKey.put(listener.key(), listeners);
            }
            listeners.add(listener);
            registered.registry = this;
            if (first) {
                try {
                    firstArrived.accept(listener.key());
                } catch (RuntimeException | Error e) {
                    byKey.remove(listener.key());
                    registered.registry = null;
                    throw e;
                }
            }
            if (listener.isClosed()) {
                // Closed by another thread while it was being added, before it knew its registry.
                remove(listener);
            }
            return listener;
        }
    }

    /** Calls every open listener of {@code key} once, in arrival order; {@code why} names the notice in logs. */
    public void wake(String key, String why) {
        List<L> listeners = byKey.get(key);
        if (listeners != null) {
            for (L listener : listeners) {
                listener.notifyReleased(why);
            }
        }
    }

    /** Calls every open listener of every key once: notices may have been missed (a connection was lost or regained). */
    public void wakeAll(String why) {
        for (List<L> listeners : byKey.values()) {
            for (L listener : listeners) {
                listener.notifyReleased(why);
            }
        }
    }

    /** Runs {@code action} for each listener of {@code key}, without the lock. */
    public void forEach(String key, Consumer<? super L> action) {
        List<L> listeners = byKey.get(key);
        if (listeners != null) {
            listeners.forEach(action);
        }
    }

    /** Runs {@code action} for each listener of every key, without the lock. */
    public void forEach(Consumer<? super L> action) {
        byKey.values().forEach(listeners -> listeners.forEach(action));
    }

    /** The keys that have a listener now (a copy). */
    public Set<String> keys() {
        return Set.copyOf(byKey.keySet());
    }

    /** True while {@code key} has a listener. */
    public boolean contains(String key) {
        return byKey.containsKey(key);
    }

    private void remove(Listener listener) {
        synchronized (lock) {
            List<L> listeners = byKey.get(listener.key());
            if (listeners != null && listeners.remove(listener) && listeners.isEmpty()) {
                byKey.remove(listener.key());
                lastLeft.accept(listener.key());
            }
        }
    }

    /**
     * One listener's interest in one key, active while open: right for a store with no connection to wait for.
     * A store whose notices flow only while it is connected and subscribed extends it with how it tells
     * ({@link #awaitActive}, {@link #isActive}).
     */
    public static class Listener implements ReleaseNotices.Subscription {

        private final String key;
        private final Runnable onRelease;
        private volatile boolean closed;
        /** Set once by {@link KeyListeners#add}, holding its lock. */
        private volatile KeyListeners<?> registry;

        /** A listener calling {@code onRelease} on each notice for {@code key} until it is closed. */
        public Listener(String key, Runnable onRelease) {
            this.key = Objects.requireNonNull(key, "key");
            this.onRelease = Objects.requireNonNull(onRelease, "onRelease");
        }

        /** The key this listener is registered under. */
        public final String key() {
            return key;
        }

        /** True once {@link #close()} began. */
        public final boolean isClosed() {
            return closed;
        }

        /**
         * Runs the listener's callback unless it is closed. A callback that throws is logged and ignored: it must
         * not stop the store's notice thread or the other listeners.
         */
        public final void notifyReleased(String why) {
            if (closed) {
                return;
            }
            try {
                onRelease.run();
            } catch (Throwable e) {
                log.warn("dlock release listener for '{}' threw on a {} notice; ignored", key, why, e);
            }
        }

        /** True while open; a store's listener overrides it when notices also need a connection and a subscription. */
        @Override
        public boolean awaitActive(Duration timeout) throws InterruptedException {
            return !closed;
        }

        /** True while open; a store's listener overrides it when notices also need a connection and a subscription. */
        @Override
        public boolean isActive() {
            return !closed;
        }

        /** Stops listening, once: the key's last listener leaving runs {@code lastLeft}; then {@link #closed()}. */
        @Override
        public final void close() {
            KeyListeners<?> owner;
            synchronized (this) {
                if (closed) {
                    return;
                }
                closed = true;
                owner = registry;
            }
            if (owner != null) {
                owner.remove(this);
            }
            closed();
        }

        /** Runs once after {@link #close()} removed this listener: wake threads waiting in {@link #awaitActive}. */
        protected void closed() {
        }
    }
}
