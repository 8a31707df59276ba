package dev.dlock.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A loopback TCP proxy in front of one database server that stalls a client exactly where a test needs it:
 * the first piece of client traffic that contains a given text (a statement, as the MySQL protocol sends it
 * in clear) is held back until {@link #release()}, while everything before it went through. A real network
 * stall between two statements of one transaction, which no server-side fault can place there.
 */
final class StallingProxy implements AutoCloseable {

    private final ServerSocket socket;
    private final int upstreamPort;
    private final byte[] trigger;
    private final AtomicBoolean triggered = new AtomicBoolean();
    private final CountDownLatch stalled = new CountDownLatch(1);
    private final CountDownLatch released = new CountDownLatch(1);
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();

    private StallingProxy(ServerSocket socket, int upstreamPort, String trigger) {
        this.socket = socket;
        this.upstreamPort = upstreamPort;
        this.trigger = trigger.getBytes(StandardCharsets.UTF_8);
    }

    /** Listens on a free loopback port and forwards to {@code upstreamPort}, stalling the first traffic containing {@code trigger}. */
    static StallingProxy start(int upstreamPort, String trigger) throws IOException {
        StallingProxy proxy = new StallingProxy(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), upstreamPort, trigger);
        daemon("stalling-proxy-accept", proxy::accept);
        return proxy;
    }

    int port() {
        return socket.getLocalPort();
    }

    /** Waits until the trigger arrived and is held; fails after {@code timeout}. */
    void awaitStalled(Duration timeout) throws InterruptedException {
        if (!stalled.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("no traffic containing '" + new String(trigger, StandardCharsets.UTF_8)
                    + "' within " + timeout);
        }
    }

    /** Lets the held traffic and everything after it through. */
    void release() {
        released.countDown();
    }

    @Override
    public void close() throws IOException {
        release();
        socket.close();
        for (Socket open : sockets) {
            open.close();
        }
    }

    private void accept() {
        try {
            while (true) {
                Socket client = socket.accept();
                Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
                sockets.add(client);
                sockets.add(upstream);
                daemon("stalling-proxy-up", () -> pump(client, upstream, true));
                daemon("stalling-proxy-down", () -> pump(upstream, client, false));
            }
        } catch (IOException closed) {
            // The proxy was closed.
        }
    }

    private void pump(Socket from, Socket to, boolean mayStall) {
        byte[] buffer = new byte[64 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            for (int read; (read = in.read(buffer)) > 0; ) {
                if (mayStall && contains(buffer, read) && triggered.compareAndSet(false, true)) {
                    stalled.countDown();
                    released.await();
                }
                out.write(buffer, 0, read);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // Either side closed; closing both below ends the other direction too.
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private boolean contains(byte[] buffer, int length) {
        outer:
        for (int start = 0; start + trigger.length <= length; start++) {
            for (int i = 0; i < trigger.length; i++) {
                if (buffer[start + i] != trigger[i]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // Already closed.
        }
    }

    private static void daemon(String name, Runnable work) {
        Thread thread = new Thread(work, name);
        thread.setDaemon(true);
        thread.start();
    }
}
