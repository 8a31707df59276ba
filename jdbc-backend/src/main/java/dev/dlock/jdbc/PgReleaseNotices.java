package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

import javax.sql.DataSource;

import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.KeyListeners;
import dev.dlock.core.spi.ReleaseNotices;

/**
 * PostgreSQL LISTEN/NOTIFY release notices over one connection per backend, owned by one thread:
 * it LISTENs to the channel of every key someone in this JVM waits on, UNLISTENs the rest, and hands
 * each notice to the key's listeners. When the connection fails it calls every listener once (their
 * waiters poll now), reconnects, listens again, and calls every listener once more, because releases
 * may have gone unheard meanwhile.
 */
final class PgReleaseNotices implements ReleaseNotices, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PgReleaseNotices.class);

    /** How long one wait for notices lasts; also how soon a new channel is listened to. */
    private static final int POLL_MILLIS = 50;
    private static final long HEALTH_CHECK_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final long FIRST_RETRY_MILLIS = 100;
    private static final long MAX_RETRY_MILLIS = 2_000;
    private static final Executor DIRECT = Runnable::run;

    private final DataSource dataSource;
    private final Function<String, String> channelOf;
    private final int networkTimeoutMillis;
    /** Listeners per channel; the notice thread listens to exactly the channels that have one. */
    private final KeyListeners<Listener> listeners = new KeyListeners<>();
    private final Object startLock = new Object();
    private Thread thread;
    private volatile boolean closed;

    // Owned by the notice thread.
    private Connection connection;
    private final Set<String> listened = new HashSet<>();
    private boolean connectedBefore;
    /** True from a completed connect (channels listened) until the connection is given up. */
    private boolean live;
    private long lastHealthCheck;

    PgReleaseNotices(DataSource dataSource, Function<String, String> channelOf, int networkTimeoutMillis) {
        this.dataSource = dataSource;
        this.channelOf = channelOf;
        this.networkTimeoutMillis = networkTimeoutMillis;
    }

    /** True when the PostgreSQL driver, whose API the notices need, is on the class path. */
    static boolean driverPresent() {
        try {
            Class.forName("org.postgresql.PGConnection", false, JdbcLockBackend.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    @Override
    public Subscription subscribe(String key, Runnable onRelease) {
        Listener listener = listeners.add(new Listener(channelOf.apply(key), onRelease));
        startThread();
        return listener;
    }

    private void startThread() {
        synchronized (startLock) {
            if (thread == null && !closed) {
                thread = new Thread(this::run, "dlock-jdbc-notices");
                thread.setDaemon(true);
                thread.start();
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        Thread running;
        synchronized (startLock) {
            running = thread;
        }
        if (running != null) {
            try {
                running.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void run() {
        long retryMillis = FIRST_RETRY_MILLIS;
        while (!closed) {
            try {
                if (connection == null) {
                    connect();
                }
                listenToWantedChannels();
                PGNotification[] notifications = connection.unwrap(PGConnection.class).getNotifications(POLL_MILLIS);
                if (notifications != null) {
                    for (PGNotification notification : notifications) {
                        deliver(notification.getName());
                    }
                }
                checkHealth();
                retryMillis = FIRST_RETRY_MILLIS;
            } catch (SQLException | RuntimeException e) {
                if (closed) {
                    break;
                }
                log.warn("dlock release notices: connection lost ({}); waiters poll until it is back", e.toString());
                disconnect();
                pause(retryMillis);
                retryMillis = Math.min(MAX_RETRY_MILLIS, retryMillis * 2);
            }
        }
        disconnect();
    }

    private void connect() throws SQLException {
        Connection fresh = dataSource.getConnection();
        try {
            fresh.setAutoCommit(true);
            fresh.setNetworkTimeout(DIRECT, networkTimeoutMillis);
            fresh.unwrap(PGConnection.class);
        } catch (SQLException | RuntimeException e) {
            fresh.close();
            throw e;
        }
        connection = fresh;
        listened.clear();
        lastHealthCheck = System.nanoTime();
        listenToWantedChannels();
        if (connectedBefore) {
            log.info("dlock release notices: reconnected; waking every waiter once");
            listeners.wakeAll("reconnect");
        }
        connectedBefore = true;
        live = true;
    }

    /** LISTENs to every channel someone waits on, UNLISTENs the others, and marks the listeners active. */
    private void listenToWantedChannels() throws SQLException {
        Set<String> wanted = listeners.keys();
        try (Statement statement = connection.createStatement()) {
            for (String channel : wanted) {
                if (!listened.contains(channel)) {
                    // Channels are "dlock_" plus hex digits: nothing else ever reaches this statement.
                    statement.execute("LISTEN \"" + channel + "\"");
                    listened.add(channel);
                }
            }
            for (String channel : Set.copyOf(listened)) {
                if (!wanted.contains(channel)) {
                    statement.execute("UNLISTEN \"" + channel + "\"");
                    listened.remove(channel);
                }
            }
        }
        for (String channel : listened) {
            listeners.forEach(channel, Listener::activate);
        }
    }

    /** A stalled or vanished server sends nothing; a periodic round trip notices it. */
    private void checkHealth() throws SQLException {
        long now = System.nanoTime();
        if (now - lastHealthCheck < HEALTH_CHECK_NANOS) {
            return;
        }
        lastHealthCheck = now;
        try (Statement statement = connection.createStatement()) {
            statement.execute("SELECT 1");
        }
    }

    private void deliver(String channel) {
        listeners.wake(channel, "release");
    }

    /**
     * Marks every listener inactive; when a live connection was lost, also calls each once, so that
     * waiters stop relying on notices and poll the store (failed reconnects do not call them again).
     */
    private void disconnect() {
        listeners.forEach(Listener::deactivate);
        listened.clear();
        if (live && !closed) {
            listeners.wakeAll("connection lost");
        }
        live = false;
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException | RuntimeException e) {
                log.debug("dlock release notices: closing the lost connection failed: {}", e.toString());
            }
            connection = null;
        }
    }

    private void pause(long millis) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (!closed && System.nanoTime() < end) {
            try {
                Thread.sleep(Math.min(50, millis));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** One waiter's interest in one key: active once its channel is listened to on a live connection. */
    private static final class Listener extends KeyListeners.Listener {
        /** A lock, not a monitor: the waiter waits on it (a monitor wait pins a virtual thread on JDK 21 to 23). */
        private final ReentrantLock activeLock = new ReentrantLock();
        private final Condition activeChanged = activeLock.newCondition();
        private boolean active;

        Listener(String channel, Runnable onRelease) {
            super(channel, onRelease);
        }

        void activate() {
            activeLock.lock();
            try {
                if (!active && !isClosed()) {
                    active = true;
                    activeChanged.signalAll();
                }
            } finally {
                activeLock.unlock();
            }
        }

        void deactivate() {
            activeLock.lock();
            try {
                active = false;
            } finally {
                activeLock.unlock();
            }
        }

        @Override
        public boolean awaitActive(Duration timeout) throws InterruptedException {
            long end = System.nanoTime() + timeout.toNanos();
            activeLock.lock();
            try {
                while (!active && !isClosed()) {
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    activeChanged.awaitNanos(left);
                }
                return active;
            } finally {
                activeLock.unlock();
            }
        }

        @Override
        public boolean isActive() {
            activeLock.lock();
            try {
                return active;
            } finally {
                activeLock.unlock();
            }
        }

        @Override
        protected void closed() {
            activeLock.lock();
            try {
                active = false;
                activeChanged.signalAll();
            } finally {
                activeLock.unlock();
            }
        }
    }
}
