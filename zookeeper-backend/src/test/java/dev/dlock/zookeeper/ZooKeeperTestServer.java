package dev.dlock.zookeeper;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A real ZooKeeper server inside the test JVM (Curator's {@link TestingServer}) on a free loopback port,
 * in a fresh temporary directory. No fsync (tests need no durability across power loss), empty
 * container nodes reaped every 100 ms (so tests meet a reaped key node often), and the four-letter
 * commands on, for the server's mode.
 */
final class ZooKeeperTestServer implements AutoCloseable {

    /**
     * A {@code size}-member ensemble on distinct free loopback ports: Curator's own {@code new TestingCluster(n)} draws
     * each port at random and failed a CI run with two members on one port ("Multiple entries with same key").
     */
    static org.apache.curator.test.TestingCluster ensemble(int size) {
        java.util.List<org.apache.curator.test.InstanceSpec> specs = new java.util.ArrayList<>();
        int[] taken = new int[0];
        for (int id = 1; id <= size; id++) {
            int[] ports = new int[3];
            for (int i = 0; i < 3; i++) {
                ports[i] = dev.dlock.testkit.LoopbackPorts.free(taken);
                taken = java.util.Arrays.copyOf(taken, taken.length + 1);
                taken[taken.length - 1] = ports[i];
            }
            specs.add(new org.apache.curator.test.InstanceSpec(null, ports[0], ports[1], ports[2], true, id));
        }
        return new org.apache.curator.test.TestingCluster(specs);
    }

    /** Sets the server settings above; in force for every server this JVM starts afterwards. */
    static void applyServerSettings() {
        System.setProperty("zookeeper.forceSync", "no");
        System.setProperty("znode.container.checkIntervalMs", "100");
        System.setProperty("zookeeper.4lw.commands.whitelist", "srvr,mntr");
        System.setProperty("zookeeper.admin.enableServer", "false");
    }

    private final TestingServer server;

    private ZooKeeperTestServer(TestingServer server) {
        this.server = server;
    }

    /** Starts a server. */
    static ZooKeeperTestServer start() {
        applyServerSettings();
        try {
            return new ZooKeeperTestServer(new TestingServer(true));
        } catch (Exception e) {
            throw new IllegalStateException("could not start an in-process ZooKeeper", e);
        }
    }

    String connectString() {
        return server.getConnectString();
    }

    int port() {
        return server.getPort();
    }

    /** Stops the server abruptly: client connections drop, sessions stay in its data until it is back. */
    void crash() {
        try {
            server.stop();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts the stopped server again on the same port and data: sessions that reconnect in time live on. */
    void restart() {
        try {
            server.restart();
        } catch (Exception e) {
            throw new IllegalStateException("could not restart the in-process ZooKeeper", e);
        }
    }

    /** The value of the {@code srvr} line starting with {@code label} from the server on {@code port}. */
    static String srvr(int port, String label) {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            OutputStream out = socket.getOutputStream();
            out.write("srvr".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (line.startsWith(label)) {
                    return line.substring(label.length()).trim();
                }
            }
            throw new IllegalStateException("no '" + label + "' line in the srvr answer of port " + port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Expires the client's session in the server, as a long partition would: a second connection takes
     * over the session and closes it. The server deletes the session's ephemeral nodes at once; the client
     * learns it on its next contact.
     */
    static void expireSession(CuratorFramework client, String connectString) throws Exception {
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper thief = new ZooKeeper(connectString, 5000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        }, zk.getSessionId(), zk.getSessionPasswd());
        try {
            if (!connected.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not take over session " + Long.toHexString(zk.getSessionId()));
            }
        } finally {
            thief.close();
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
