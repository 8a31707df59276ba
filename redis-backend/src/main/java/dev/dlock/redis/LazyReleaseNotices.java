package dev.dlock.redis;

import java.time.Duration;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.ReleaseNotices;

import redis.clients.jedis.exceptions.JedisException;

/**
 * Creates the backend's pub/sub notices on the first subscription, because choosing between classic
 * and sharded pub/sub may need to ask the cluster which Redis version it runs. When that question
 * cannot be answered yet, the subscription stays inactive and its waiter polls the store.
 */
final class LazyReleaseNotices implements ReleaseNotices {

    private static final Logger log = LoggerFactory.getLogger(LazyReleaseNotices.class);

    private final Supplier<PubSubReleaseNotices> factory;
    private PubSubReleaseNotices notices;
    private boolean closed;

    LazyReleaseNotices(Supplier<PubSubReleaseNotices> factory) {
        this.factory = factory;
    }

    /** Delegates to the notices, creating them first; an inactive subscription when Redis cannot be asked now. */
    @Override
    public Subscription subscribe(String key, Runnable onRelease) {
        if (onRelease == null) {
            throw new IllegalArgumentException("onRelease must not be null");
        }
        PubSubReleaseNotices current;
        try {
            current = notices();
        } catch (JedisException e) {
            log.debug("Release notices unavailable for now (cannot choose the pub/sub mode): {}", e.toString());
            return NeverActive.INSTANCE;
        }
        return current.subscribe(key, onRelease);
    }

    /** The notices if created, for tests; null before the first subscription. */
    synchronized PubSubReleaseNotices created() {
        return notices;
    }

    /** Closes the notices if they were created; later subscriptions throw. */
    void close() {
        PubSubReleaseNotices current;
        synchronized (this) {
            closed = true;
            current = notices;
        }
        if (current != null) {
            current.close();
        }
    }

    private synchronized PubSubReleaseNotices notices() {
        if (closed) {
            throw new IllegalStateException("Release notices are closed (the RedisLockBackend was closed)");
        }
        if (notices == null) {
            notices = factory.get();
        }
        return notices;
    }

    /** A subscription whose notices never flow: its waiter falls back to polling the store. */
    private enum NeverActive implements Subscription {
        INSTANCE;

        @Override
        public boolean awaitActive(Duration timeout) {
            return false;
        }

        @Override
        public boolean isActive() {
            return false;
        }

        @Override
        public void close() {
            // Nothing was subscribed.
        }
    }
}
