package dev.dlock.testkit.redis;

import dev.dlock.testkit.LoopbackPorts;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A loopback TCP proxy in front of one Redis server that injects real network faults, for tests: clients connect to
 * {@link #host()}:{@link #port()} and every RESP command is forwarded upstream unless a fault says otherwise (failed,
 * delayed or held commands; held or delayed replies; cut connections: each method's Javadoc says how). Faults can be
 * switched at any time and apply to live connections; {@link #passThrough()} clears them all, and
 * {@link #commandCount()} and {@link Rule#matched()} count what the proxy saw. Connections are plain RESP2/RESP3
 * connections; only commands sent as RESP arrays (what every client library sends) are understood.
 */
public final class RespProxy implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RespProxy.class);

    private static final String HOST = "127.0.0.1";
    private static final int CONNECT_TIMEOUT_MILLIS = 2_000;
    private static final byte[] ERROR_SCRIPT = "return redis.error_reply(ARGV[1])".getBytes(StandardCharsets.UTF_8);
    private static final byte[] END_OF_STREAM = new byte[0];

    private final String upstreamHost;
    private final int upstreamPort;
    private final int port;
    private final Object faults = new Object();
    private final List<Rule> rules = new CopyOnWriteArrayList<>();
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private final AtomicLong commands = new AtomicLong();
    /** Guarded by {@link #faults}; a change wakes every reply writer. */
    private boolean repliesHeld;
    private long replyDelayNanos;
    private ServerSocket listener;
    private volatile boolean closed;

    private RespProxy(String upstreamHost, int upstreamPort, ServerSocket listener) {
        this.upstreamHost = upstreamHost;
        this.upstreamPort = upstreamPort;
        this.port = listener.getLocalPort();
        this.listener = listener;
    }

    /** Starts a pass-through proxy on a free loopback port, forwarding to {@code host}:{@code port}. */
    public static RespProxy start(String host, int port) {
        try {
            // Below the ephemeral range: cutConnections and acceptConnections listen again on this port.
            ServerSocket listener = new ServerSocket(LoopbackPorts.free(), 50, InetAddress.getByName(HOST));
            RespProxy proxy = new RespProxy(host, port, listener);
            proxy.startAcceptor(listener);
            return proxy;
        } catch (IOException e) {
            throw new IllegalStateException("Cannot start a RESP proxy to " + host + ":" + port, e);
        }
    }

    /** Starts a pass-through proxy on a free loopback port in front of {@code upstream}. */
    public static RespProxy start(RedisServerProcess upstream) {
        return start(upstream.host(), upstream.port());
    }

    /** Always {@code 127.0.0.1}. */
    public String host() {
        return HOST;
    }

    /** The port clients connect to; stays the same across {@link #cutConnections()} and {@link #acceptConnections()}. */
    public int port() {
        return port;
    }

    /**
     * Answers every command matching {@code matching} with the error {@code error} (for example
     * {@code "ERR refused by the test proxy"}; the first word is the error code clients see) instead of
     * running it. Checked in the order faults were added, before {@link #delayCommands} faults added later. The command
     * is replaced by a script that returns the error, rather than answered by the proxy, so replies stay in request order
     * on a pipelined connection (the failed command never runs).
     */
    public Rule failCommands(Predicate<Command> matching, String error) {
        Objects.requireNonNull(error, "error");
        return addRule(new Rule(matching, error, 0, false));
    }

    /** Forwards every command matching {@code matching} only after {@code delay}; later commands of its connection wait behind it. */
    public Rule delayCommands(Predicate<Command> matching, Duration delay) {
        if (delay.isNegative()) {
            throw new IllegalArgumentException("delay must not be negative, got " + delay);
        }
        return addRule(new Rule(matching, null, delay.toNanos(), false));
    }

    /**
     * Holds the first command matching {@code matching} before it reaches the server, until {@link Rule#release()} (or
     * {@link Rule#remove()}, {@link #passThrough()}, {@link #close()}); {@link Rule#awaitHeld} waits until it is held.
     * Later commands of its connection wait behind it; other connections flow. The held command is sent to the server
     * when released even if its client closed the connection meanwhile: a command that lands after its client timed out.
     */
    public Rule holdCommand(Predicate<Command> matching) {
        return addRule(new Rule(matching, null, 0, true));
    }

    /** Stops passing replies to clients (the server still runs every command) until {@link #releaseReplies()}. */
    public void holdReplies() {
        synchronized (faults) {
            repliesHeld = true;
        }
    }

    /** Passes the held replies on, in order, and every later one. */
    public void releaseReplies() {
        synchronized (faults) {
            repliesHeld = false;
            faults.notifyAll();
        }
    }

    /** Passes every reply on no earlier than {@code delay} after the server sent it; zero for none. */
    public void delayReplies(Duration delay) {
        if (delay.isNegative()) {
            throw new IllegalArgumentException("delay must not be negative, got " + delay);
        }
        synchronized (faults) {
            replyDelayNanos = delay.toNanos();
            faults.notifyAll();
        }
    }

    /**
     * Closes every connection and refuses new ones (the port stops listening: connection refused, like a dead host) until
     * {@link #acceptConnections()}, which listens again on the same port.
     */
    public void cutConnections() {
        synchronized (faults) {
            if (listener != null) {
                closeQuietly(listener);
                listener = null;
            }
        }
        sockets.forEach(RespProxy::closeQuietly);
    }

    /** Listens on the same port again after {@link #cutConnections()}; does nothing while listening. */
    public void acceptConnections() {
        synchronized (faults) {
            if (closed || listener != null) {
                return;
            }
            // A connection accepted just before the cut may still be setting up on the acceptor thread (it closes itself
            // once it sees the cut); while it is open the port cannot be bound, so binding is retried for a while.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                try {
                    ServerSocket reopened = new ServerSocket();
                    reopened.setReuseAddress(true);
                    try {
                        reopened.bind(new InetSocketAddress(InetAddress.getByName(HOST), port), 50);
                    } catch (IOException e) {
                        closeQuietly(reopened);
                        throw e;
                    }
                    listener = reopened;
                    startAcceptor(reopened);
                    return;
                } catch (BindException e) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new IllegalStateException("RESP proxy cannot listen on port " + port + " again", e);
                    }
                    sockets.forEach(RespProxy::closeQuietly);
                    try {
                        faults.wait(10);
                    } catch (InterruptedException interrupted) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException("interrupted while listening on port " + port + " again", e);
                    }
                } catch (IOException e) {
                    throw new IllegalStateException("RESP proxy cannot listen on port " + port + " again", e);
                }
            }
        }
    }

    /** Clears every fault: no failed or delayed commands, replies flow, new connections are accepted. */
    public void passThrough() {
        rules.forEach(Rule::release);
        rules.clear();
        synchronized (faults) {
            repliesHeld = false;
            replyDelayNanos = 0;
            faults.notifyAll();
        }
        acceptConnections();
    }

    /** How many commands clients sent through the proxy since it started (failed and delayed ones included). */
    public long commandCount() {
        return commands.get();
    }

    /** How many client connections are open now. */
    public int openConnections() {
        return sockets.size() / 2;
    }

    /** Closes every connection and stops listening; idempotent. */
    @Override
    public void close() {
        synchronized (faults) {
            closed = true;
            faults.notifyAll();
        }
        rules.forEach(Rule::release);
        cutConnections();
    }

    @Override
    public String toString() {
        return "RespProxy[" + HOST + ":" + port + " -> " + upstreamHost + ":" + upstreamPort + "]";
    }

    private Rule addRule(Rule rule) {
        rules.add(rule);
        return rule;
    }

    private void startAcceptor(ServerSocket socket) {
        startDaemon("dlock-resp-proxy-accept-" + port, () -> acceptLoop(socket));
    }

    private void acceptLoop(ServerSocket socket) {
        while (!socket.isClosed()) {
            Socket client;
            try {
                client = socket.accept();
            } catch (IOException e) {
                if (!socket.isClosed()) {
                    log.warn("RESP proxy on port {} failed to accept: {}", port, e.toString());
                }
                return;
            }
            Socket upstream = new Socket();
            try {
                upstream.connect(new InetSocketAddress(upstreamHost, upstreamPort), CONNECT_TIMEOUT_MILLIS);
            } catch (IOException e) {
                log.debug("RESP proxy on port {} cannot reach {}:{}: {}", port, upstreamHost, upstreamPort, e.toString());
                closeQuietly(client);
                closeQuietly(upstream);
                continue;
            }
            sockets.add(client);
            sockets.add(upstream);
            if (socket.isClosed()) {
                // Cut while this connection was being set up: it must not survive the cut.
                closeBoth(client, upstream);
                return;
            }
            BlockingQueue<Reply> replies = new LinkedBlockingQueue<>();
            startDaemon("dlock-resp-proxy-commands-" + port, () -> forwardCommands(client, upstream));
            startDaemon("dlock-resp-proxy-replies-in-" + port, () -> readReplies(upstream, client, replies));
            startDaemon("dlock-resp-proxy-replies-out-" + port, () -> writeReplies(client, upstream, replies));
        }
    }

    private void forwardCommands(Socket client, Socket upstream) {
        try {
            InputStream in = new BufferedInputStream(client.getInputStream());
            OutputStream out = upstream.getOutputStream();
            while (true) {
                Command command = Command.read(in);
                if (command == null) {
                    return;
                }
                commands.incrementAndGet();
                Rule rule = matchingRule(command);
                if (rule != null && rule.error != null) {
                    command = new Command(List.of("EVAL".getBytes(StandardCharsets.US_ASCII), ERROR_SCRIPT,
                            "0".getBytes(StandardCharsets.US_ASCII), rule.error.getBytes(StandardCharsets.UTF_8)));
                } else if (rule != null && rule.delayNanos > 0) {
                    TimeUnit.NANOSECONDS.sleep(rule.delayNanos);
                } else if (rule != null && rule.holding) {
                    rule.hold();
                }
                out.write(command.encode());
                out.flush();
            }
        } catch (IOException e) {
            log.debug("RESP proxy on port {}: command stream ended: {}", port, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            closeBoth(client, upstream);
        }
    }

    private Rule matchingRule(Command command) {
        for (Rule rule : rules) {
            if (rule.matching.test(command) && rule.take()) {
                return rule;
            }
        }
        return null;
    }

    private void readReplies(Socket upstream, Socket client, BlockingQueue<Reply> replies) {
        byte[] buffer = new byte[8192];
        try {
            InputStream in = upstream.getInputStream();
            int read;
            while ((read = in.read(buffer)) >= 0) {
                replies.add(new Reply(Arrays.copyOf(buffer, read), System.nanoTime()));
            }
        } catch (IOException e) {
            log.debug("RESP proxy on port {}: reply stream ended: {}", port, e.toString());
        } finally {
            replies.add(new Reply(END_OF_STREAM, System.nanoTime()));
        }
    }

    private void writeReplies(Socket client, Socket upstream, BlockingQueue<Reply> replies) {
        try {
            OutputStream out = client.getOutputStream();
            while (true) {
                Reply reply = replies.take();
                if (reply.bytes == END_OF_STREAM || !awaitPassable(reply, client)) {
                    return;
                }
                out.write(reply.bytes);
                out.flush();
            }
        } catch (IOException e) {
            log.debug("RESP proxy on port {}: client gone: {}", port, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            closeBoth(client, upstream);
        }
    }

    /** Waits while replies are held or the reply is not yet due; false when the connection or proxy closed meanwhile. */
    private boolean awaitPassable(Reply reply, Socket client) throws InterruptedException {
        synchronized (faults) {
            while (!closed && !client.isClosed()) {
                if (repliesHeld) {
                    // Bounded so that a connection cut meanwhile is noticed.
                    faults.wait(100);
                    continue;
                }
                long dueInNanos = reply.receivedAtNanos + replyDelayNanos - System.nanoTime();
                if (dueInNanos <= 0) {
                    return true;
                }
                faults.wait(Math.min(100, TimeUnit.NANOSECONDS.toMillis(dueInNanos) + 1));
            }
            return false;
        }
    }

    private void closeBoth(Socket client, Socket upstream) {
        closeQuietly(client);
        closeQuietly(upstream);
        sockets.remove(client);
        sockets.remove(upstream);
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

    /** Bytes the server sent, and when they arrived. */
    private record Reply(byte[] bytes, long receivedAtNanos) {
    }

    /** One fault on the commands a predicate picks; counts the commands it applied to. */
    public final class Rule {

        private final Predicate<Command> matching;
        private final String error;
        private final long delayNanos;
        private final AtomicLong matched = new AtomicLong();
        /** A {@link #holdCommand} rule: takes one command only, and holds it until released. */
        private final boolean holding;
        private final CountDownLatch held = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);

        private Rule(Predicate<Command> matching, String error, long delayNanos, boolean holding) {
            this.matching = Objects.requireNonNull(matching, "matching");
            this.error = error;
            this.delayNanos = delayNanos;
            this.holding = holding;
        }

        /** Counts one more command this rule applies to; a hold applies to its first one only. */
        private boolean take() {
            if (holding) {
                return matched.compareAndSet(0, 1);
            }
            matched.incrementAndGet();
            return true;
        }

        private void hold() throws InterruptedException {
            held.countDown();
            released.await();
        }

        /** For {@link #holdCommand}: whether the command is held (or was, and was released) within {@code timeout}. */
        public boolean awaitHeld(Duration timeout) throws InterruptedException {
            return held.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
        }

        /** For {@link #holdCommand}: sends the held command on to the server (and every later one of its connection). */
        public void release() {
            released.countDown();
        }

        /** How many commands this fault applied to. */
        public long matched() {
            return matched.get();
        }

        /** Stops this fault; commands it would have picked pass through from now on, a held one included. */
        public void remove() {
            rules.remove(this);
            release();
        }
    }

    /**
     * One command a client sent (a RESP array of bulk strings), as the fault predicates see it, and
     * factories for the common predicates.
     */
    public static final class Command {

        private final List<byte[]> parts;

        private Command(List<byte[]> parts) {
            this.parts = parts;
        }

        /** The command name in upper case ({@code "EVALSHA"}). */
        public String name() {
            return parts.isEmpty() ? "" : text(0).toUpperCase(Locale.ROOT);
        }

        /** How many parts the command has, its name included. */
        public int size() {
            return parts.size();
        }

        /** Part {@code index} (0 is the name) as UTF-8 text. */
        public String text(int index) {
            return new String(parts.get(index), StandardCharsets.UTF_8);
        }

        /** Part {@code index} (0 is the name) exactly as sent; do not modify the array. */
        public byte[] bytes(int index) {
            return parts.get(index);
        }

        /** True when a part after the name equals {@code argument}. */
        public boolean hasArgument(String argument) {
            for (int i = 1; i < parts.size(); i++) {
                if (text(i).equals(argument)) {
                    return true;
                }
            }
            return false;
        }

        /** Picks commands named {@code name}, in any case. */
        public static Predicate<Command> named(String name) {
            String upper = name.toUpperCase(Locale.ROOT);
            return command -> command.name().equals(upper);
        }

        /**
         * Picks every way a client runs the Lua script whose SHA-1 is {@code sha1}: {@code EVALSHA} or
         * {@code EVALSHA_RO} of it, and {@code EVAL} or {@code EVAL_RO} of a body with that SHA-1 (clients
         * send the body after a {@code NOSCRIPT} error).
         */
        public static Predicate<Command> runsScript(String sha1) {
            String wanted = sha1.toLowerCase(Locale.ROOT);
            return command -> command.size() >= 2 && switch (command.name()) {
                case "EVALSHA", "EVALSHA_RO" -> command.text(1).toLowerCase(Locale.ROOT).equals(wanted);
                case "EVAL", "EVAL_RO" -> sha1Hex(command.bytes(1)).equals(wanted);
                default -> false;
            };
        }

        @Override
        public String toString() {
            List<String> texts = new ArrayList<>(parts.size());
            for (int i = 0; i < parts.size(); i++) {
                texts.add(text(i));
            }
            return String.join(" ", texts);
        }

        /** Reads one command; null at the end of the stream. */
        static Command read(InputStream in) throws IOException {
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
            return new Command(parts);
        }

        byte[] encode() {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            out.writeBytes(("*" + parts.size() + "\r\n").getBytes(StandardCharsets.US_ASCII));
            for (byte[] part : parts) {
                out.writeBytes(("$" + part.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
                out.writeBytes(part);
                out.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
            }
            return out.toByteArray();
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

        private static String sha1Hex(byte[] body) {
            try {
                return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(body));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("SHA-1 is not available in this JVM", e);
            }
        }
    }
}
