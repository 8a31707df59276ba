package dev.dlock.testkit.redis;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * A loopback RESP proxy in front of a standalone Redis that behaves like a cluster proxy (Envoy,
 * twemproxy-style): any {@code EVAL}/{@code EVALSHA} whose keys hash to more than one cluster slot
 * is refused with a {@code CROSSSLOT} error; everything else passes through unchanged.
 *
 * <p>A refused script is replaced by a script that returns the error, rather than answered by the
 * proxy itself, so replies stay in request order on a pipelined connection.
 */
public final class CrossSlotRejectingProxy implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CrossSlotRejectingProxy.class);

    private static final String HOST = "127.0.0.1";
    private static final byte[] REFUSAL_SCRIPT =
            "return redis.error_reply('CROSSSLOT Keys in request do not hash to the same slot (dlock test proxy)')"
                    .getBytes(StandardCharsets.UTF_8);

    private final ServerSocket listener;
    private final String upstreamHost;
    private final int upstreamPort;
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong scripts = new AtomicLong();
    private volatile boolean closed;

    private CrossSlotRejectingProxy(ServerSocket listener, String upstreamHost, int upstreamPort) {
        this.listener = listener;
        this.upstreamHost = upstreamHost;
        this.upstreamPort = upstreamPort;
    }

    /** Starts the proxy on a free loopback port, forwarding to {@code upstream}. */
    public static CrossSlotRejectingProxy start(RedisServerProcess upstream) {
        try {
            ServerSocket listener = new ServerSocket(0, 50, InetAddress.getByName(HOST));
            CrossSlotRejectingProxy proxy = new CrossSlotRejectingProxy(listener, upstream.host(), upstream.port());
            Thread acceptor = new Thread(proxy::acceptLoop, "dlock-crossslot-proxy-accept");
            acceptor.setDaemon(true);
            acceptor.start();
            return proxy;
        } catch (IOException e) {
            throw new IllegalStateException("Cannot start the CROSSSLOT proxy", e);
        }
    }

    /** Always {@code 127.0.0.1}. */
    public String host() {
        return HOST;
    }

    /** The port clients connect to. */
    public int port() {
        return listener.getLocalPort();
    }

    /** How many scripts were refused for spanning several slots. */
    public long refusedScripts() {
        return refused.get();
    }

    /** How many scripts passed through (refused or not). */
    public long scripts() {
        return scripts.get();
    }

    /** Stops accepting and closes every connection. */
    @Override
    public void close() {
        closed = true;
        closeQuietly(listener);
        sockets.forEach(CrossSlotRejectingProxy::closeQuietly);
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                Socket upstream = new Socket(upstreamHost, upstreamPort);
                sockets.add(client);
                sockets.add(upstream);
                startDaemon("dlock-crossslot-proxy-up", () -> forwardCommands(client, upstream));
                startDaemon("dlock-crossslot-proxy-down", () -> copy(upstream, client));
            } catch (IOException e) {
                if (!closed) {
                    log.warn("CROSSSLOT proxy accept failed: {}", e.toString());
                }
            }
        }
    }

    private void forwardCommands(Socket client, Socket upstream) {
        try (client; upstream) {
            InputStream in = new BufferedInputStream(client.getInputStream());
            OutputStream out = upstream.getOutputStream();
            while (true) {
                List<byte[]> command = readCommand(in);
                if (command == null) {
                    return;
                }
                if (spansSeveralSlots(command)) {
                    refused.incrementAndGet();
                    command = List.of("EVAL".getBytes(StandardCharsets.US_ASCII), REFUSAL_SCRIPT,
                            "0".getBytes(StandardCharsets.US_ASCII));
                }
                out.write(encode(command));
                out.flush();
            }
        } catch (IOException e) {
            log.debug("CROSSSLOT proxy connection ended: {}", e.toString());
        } finally {
            sockets.remove(client);
            sockets.remove(upstream);
        }
    }

    private boolean spansSeveralSlots(List<byte[]> command) {
        String name = new String(command.get(0), StandardCharsets.US_ASCII).toUpperCase(Locale.ROOT);
        if (!name.equals("EVAL") && !name.equals("EVALSHA") || command.size() < 3) {
            return false;
        }
        scripts.incrementAndGet();
        int keyCount = Integer.parseInt(new String(command.get(2), StandardCharsets.US_ASCII));
        Set<Integer> slots = new HashSet<>();
        for (int i = 0; i < keyCount; i++) {
            slots.add(JedisClusterCRC16.getSlot(command.get(3 + i)));
        }
        return slots.size() > 1;
    }

    private static void copy(Socket from, Socket to) {
        byte[] buffer = new byte[8192];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int read;
            while ((read = in.read(buffer)) >= 0) {
                out.write(buffer, 0, read);
                out.flush();
            }
        } catch (IOException e) {
            log.debug("CROSSSLOT proxy reply stream ended: {}", e.toString());
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    /** Reads one RESP array of bulk strings (what every Redis client sends); null at end of stream. */
    private static List<byte[]> readCommand(InputStream in) throws IOException {
        int marker = in.read();
        if (marker < 0) {
            return null;
        }
        if (marker != '*') {
            throw new IOException("Expected a RESP array, got '" + (char) marker + "'");
        }
        int count = Integer.parseInt(readLine(in));
        List<byte[]> parts = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            if (in.read() != '$') {
                throw new IOException("Expected a RESP bulk string");
            }
            int length = Integer.parseInt(readLine(in));
            byte[] part = in.readNBytes(length);
            if (part.length < length) {
                throw new EOFException();
            }
            readLine(in);
            parts.add(part);
        }
        return parts;
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\r') {
            if (c < 0) {
                throw new EOFException();
            }
            line.write(c);
        }
        in.read();
        return line.toString(StandardCharsets.US_ASCII);
    }

    private static byte[] encode(List<byte[]> command) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(("*" + command.size() + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (byte[] part : command) {
            out.writeBytes(("$" + part.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.writeBytes(part);
            out.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        return out.toByteArray();
    }

    private static void startDaemon(String name, Runnable work) {
        Thread thread = new Thread(work, name);
        thread.setDaemon(true);
        thread.start();
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            log.debug("Closing {} failed: {}", closeable, e.toString());
        }
    }
}
