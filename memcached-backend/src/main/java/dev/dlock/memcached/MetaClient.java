package dev.dlock.memcached;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connections to one memcached server: at most {@code poolSize} at once, each used by one exchange at a
 * time and kept open for the next. A kept connection that turns out broken (the server restarted since) is
 * dropped together with every other kept one, and the exchange runs once more on a new connection: every
 * exchange the store sends gives the same answer when it runs twice. A timeout is not retried.
 */
final class MetaClient implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(MetaClient.class);

    private final InetSocketAddress address;
    private final int poolSize;
    private final int timeoutMillis;
    private final Semaphore permits;
    private final ConcurrentLinkedDeque<MetaConnection> idle = new ConcurrentLinkedDeque<>();
    private volatile boolean closed;

    MetaClient(InetSocketAddress address, int poolSize, int timeoutMillis) {
        this.address = address;
        this.poolSize = poolSize;
        this.timeoutMillis = timeoutMillis;
        this.permits = new Semaphore(poolSize, true);
    }

    /** The server's address. */
    InetSocketAddress address() {
        return address;
    }

    /** Sends {@code requests} as one batch and returns their replies in order. */
    List<MetaReply> exchange(List<MetaRequest> requests) throws IOException {
        if (closed) {
            throw new IOException("the memcached client of " + address + " is closed");
        }
        takePermit();
        try {
            MetaConnection kept = idle.pollFirst();
            if (kept != null) {
                try {
                    return keepAfter(kept, kept.exchange(requests));
                } catch (SocketTimeoutException | MetaConnection.MemcachedErrorReply e) {
                    kept.close();
                    throw e;
                } catch (IOException e) {
                    kept.close();
                    dropIdleConnections();
                    log.debug("A kept connection to memcached {} failed ({}); sending again on a new one", this, e.toString());
                }
            }
            MetaConnection fresh = new MetaConnection(address, timeoutMillis);
            try {
                return keepAfter(fresh, fresh.exchange(requests));
            } catch (IOException e) {
                fresh.close();
                throw e;
            }
        } finally {
            permits.release();
        }
    }

    private List<MetaReply> keepAfter(MetaConnection connection, List<MetaReply> replies) {
        idle.offerFirst(connection);
        if (closed) {
            dropIdleConnections();
        }
        return replies;
    }

    private void takePermit() throws IOException {
        try {
            if (!permits.tryAcquire(timeoutMillis, TimeUnit.MILLISECONDS)) {
                throw new SocketTimeoutException("all " + poolSize + " connections to memcached " + address
                        + " stayed busy for " + timeoutMillis + " ms");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for a connection to memcached " + address);
        }
    }

    private void dropIdleConnections() {
        MetaConnection connection;
        while ((connection = idle.pollFirst()) != null) {
            connection.close();
        }
    }

    /** Closes the kept connections; one in use is closed when its exchange ends. */
    @Override
    public void close() {
        closed = true;
        dropIdleConnections();
    }

    @Override
    public String toString() {
        return address.getHostString() + ":" + address.getPort();
    }
}
