package dev.dlock.zookeeper;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.BackendFactory;
import org.apache.curator.drivers.AdvancedTracerDriver;
import org.apache.curator.drivers.EventTrace;
import org.apache.curator.drivers.OperationTrace;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Connects a {@link ZooKeeperLockBackend} with its own Curator client (its own session) to a connect
 * string; short timeouts, so that a dead server fails a call within seconds.
 */
public class ZooKeeperBackendFactory implements BackendFactory {

    static final int SESSION_TIMEOUT_MILLIS = 6000;
    static final int CONNECTION_TIMEOUT_MILLIS = 1500;

    private static final Map<LockBackend, CuratorFramework> CLIENTS = new ConcurrentHashMap<>();
    private static final AtomicLong OPERATIONS = new AtomicLong();
    /** Counts the operations Curator sends; the session's pings are not operations, and are not traced. */
    private static final AdvancedTracerDriver OPERATION_COUNTER = new AdvancedTracerDriver() {
        @Override
        public void addTrace(OperationTrace trace) {
            OPERATIONS.incrementAndGet();
        }

        @Override
        public void addEvent(EventTrace trace) {
        }
    };

    /**
     * ZooKeeper operations sent so far by every client made here, in the foreground or the background. The
     * server's own request count also counts each session's pings, which come at any moment.
     */
    static long operationsSent() {
        return OPERATIONS.get();
    }

    /** A started client with the test timeouts and {@code retries} retries 200 ms apart. */
    static CuratorFramework client(String connectString, int retries) {
        CuratorFramework client = CuratorFrameworkFactory.builder().connectString(connectString)
                .sessionTimeoutMs(SESSION_TIMEOUT_MILLIS).connectionTimeoutMs(CONNECTION_TIMEOUT_MILLIS)
                .retryPolicy(new RetryNTimes(retries, 200)).build();
        client.getZookeeperClient().setTracerDriver(OPERATION_COUNTER);
        client.start();
        try {
            if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                client.close();
                throw new IllegalStateException("no ZooKeeper connection to " + connectString + " within 20 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            client.close();
            throw new IllegalStateException("interrupted connecting to " + connectString, e);
        }
        return client;
    }

    @Override
    public LockBackend create(String connection) {
        CuratorFramework client = client(connection, 2);
        ZooKeeperLockBackend backend = ZooKeeperLockBackend.builder(client).build();
        CLIENTS.put(backend, client);
        return backend;
    }

    @Override
    public void dispose(LockBackend backend) {
        backend.close();
        CuratorFramework client = CLIENTS.remove(backend);
        if (client != null) {
            client.close();
        }
    }
}
